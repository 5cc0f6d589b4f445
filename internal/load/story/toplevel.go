package story

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"go.yaml.in/yaml/v3"
)

var appKeys = &keySpec{
	v1: []string{"id", "version", "title", "author", "license", "context", "context_path"},
}

func (l *loader) loadApp(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	fs, ok := l.fields(f, e.val, "app", appKeys)
	if !ok {
		return
	}
	a := &l.st.App
	strField(l, f, fs, "app", "id", &a.ID)
	strField(l, f, fs, "app", "version", &a.Version)
	strField(l, f, fs, "app", "title", &a.Title)
	strField(l, f, fs, "app", "author", &a.Author)
	strField(l, f, fs, "app", "license", &a.License)
	strField(l, f, fs, "app", "context", &a.Context)
	if cp, ok := fs.get("context_path"); ok {
		if c, has := fs.get("context"); has {
			l.errAt(f, c.key, "app.context", "set only one of app.context and app.context_path")
		} else if s, ok := l.str(f, cp.val, "app.context_path"); ok && s != "" {
			l.contextPath = &nodeRef{f: f, n: cp.val, path: "app.context_path", value: s}
		}
	}
	if strings.TrimSpace(a.ID) == "" {
		at := e.val
		if id, ok := fs.get("id"); ok {
			at = id.val
		}
		l.errAt(f, at, "app", "id: is required")
	}
}

// strField reads fs.get(key) as a string into dst when present.
func strField(l *loader, f *file, fs fieldSet, path, key string, dst *string) {
	if e, ok := fs.get(key); ok {
		if s, ok := l.str(f, e.val, joinPath(path, key)); ok {
			*dst = s
		}
	}
}

// boolField reads fs.get(key) as a boolean into dst when present.
func boolField(l *loader, f *file, fs fieldSet, path, key string, dst *bool) {
	if e, ok := fs.get(key); ok {
		if b, ok := l.boolean(f, e.val, joinPath(path, key)); ok {
			*dst = b
		}
	}
}

// strListField reads fs.get(key) as a list of strings into dst when present.
func strListField(l *loader, f *file, fs fieldSet, path, key string, dst *[]string) bool {
	if e, ok := fs.get(key); ok {
		if s, ok := l.strList(f, e.val, joinPath(path, key)); ok {
			*dst = s
			return true
		}
	}
	return false
}

func (l *loader) loadHosts(f *file, e entry) {
	hosts, _ := l.strList(f, e.val, "hosts")
	for _, h := range hosts {
		if h != "" && !slices.Contains(l.st.Hosts, h) {
			l.st.Hosts = append(l.st.Hosts, h)
		}
	}
}

var personaKeys = &keySpec{
	v1: []string{"system_prompt", "system_prompt_path", "model", "tools", "effort", "provider", "bash_profile", "cwd",
		"external_side_effect", "inherit_claude_default"},
}

// efforts are the reasoning efforts a persona may name (claude --effort).
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

func (l *loader) loadAgents(f *file, e entry) {
	es, _ := l.entries(f, e.val, "agents")
	for _, a := range es {
		path := joinPath("agents", a.name)
		if !l.dup(f, a, path, "agent", l.st.Agents[a.name] != nil) {
			continue
		}
		p := &Persona{Name: a.name}
		l.st.Agents[a.name] = p
		fs, ok := l.fields(f, a.val, path, personaKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "model", &p.Model)
		boolField(l, f, fs, path, "inherit_claude_default", &p.InheritDefault)
		l.loadPersonaExtras(f, fs, path, p)
		p.ToolsSet = strListField(l, f, fs, path, "tools", &p.Tools)
		if p.ToolsSet && p.Tools == nil {
			p.Tools = []string{}
		}
		_, hasSP := fs.get("system_prompt")
		spp, hasSPP := fs.get("system_prompt_path")
		switch {
		case hasSP && hasSPP:
			l.errAt(f, spp.key, path, "set only one of system_prompt and system_prompt_path")
		case hasSP:
			strField(l, f, fs, path, "system_prompt", &p.SystemPrompt)
		case hasSPP:
			var rel string
			strField(l, f, fs, path, "system_prompt_path", &rel)
			if rel == "" {
				l.errAt(f, spp.val, joinPath(path, "system_prompt_path"), "must name a file")
				break
			}
			b, _, err := l.ws.ReadIn(l.dir, rel)
			if err != nil {
				l.errAt(f, spp.val, joinPath(path, "system_prompt_path"), "%s", fileErr("system prompt file", rel, err))
				break
			}
			p.SystemPrompt = string(b)
		default:
			l.errAt(f, a.key, path, "needs one of system_prompt or system_prompt_path")
		}
	}
}

// loadPersonaExtras reads a persona's effort, provider, cwd,
// external_side_effect and bash_profile.
func (l *loader) loadPersonaExtras(f *file, fs fieldSet, path string, p *Persona) {
	if e, ok := fs.get("effort"); ok {
		strField(l, f, fs, path, "effort", &p.Effort)
		if p.Effort != "" && !slices.Contains(efforts, p.Effort) {
			l.errAt(f, e.val, joinPath(path, "effort"), "unknown effort %q: use one of %s%s", p.Effort,
				strings.Join(efforts, ", "), didYouMean(p.Effort, efforts))
		}
	}
	if e, ok := fs.get("provider"); ok {
		strField(l, f, fs, path, "provider", &p.Provider)
		if p.Provider != "" {
			l.personaProviders = append(l.personaProviders, &nodeRef{f: f, n: deref(e.val), path: joinPath(path, "provider"), value: p.Provider})
		}
	}
	if e, ok := fs.get("cwd"); ok {
		cp := joinPath(path, "cwd")
		var rel string
		strField(l, f, fs, path, "cwd", &rel)
		switch {
		case rel == "":
			l.errAt(f, e.val, cp, "cwd: is empty; name a directory (relative to the story) or remove the key")
		case isTemplated(rel):
			l.errAt(f, e.val, cp, "cwd: is a fixed directory, not a template; pass a templated with.working_dir on the invoke instead")
		default:
			abs, err := l.ws.Resolve(l.dir, rel)
			if err != nil {
				l.errAt(f, e.val, cp, "%s", fileErr("directory", rel, err))
				break
			}
			p.Cwd = abs
		}
	}
	if e, ok := fs.get("external_side_effect"); ok {
		if b, ok := l.boolean(f, e.val, joinPath(path, "external_side_effect")); ok {
			p.ExternalSideEffect = &b
		}
	}
	if e, ok := fs.get("bash_profile"); ok {
		p.Bash = l.loadBashProfile(f, e.val, joinPath(path, "bash_profile"))
	}
}

// loadBashProfile reads bash_profile: read-only, {commands: [...]} or
// {sandboxed_write: DIR} (also spelled sandboxed-write).
func (l *loader) loadBashProfile(f *file, n *yaml.Node, path string) *agent.BashProfile {
	d := deref(n)
	const forms = "write read-only, {commands: [git, jq]} or {sandboxed_write: DIR}"
	switch {
	case d == nil || isNull(d):
		l.errAt(f, d, path, "bash_profile: is empty; %s", forms)
		return nil
	case d.Kind == yaml.ScalarNode:
		if d.Value == "read-only" || d.Value == "read_only" {
			return &agent.BashProfile{ReadOnly: true}
		}
		l.errAt(f, d, path, "unknown bash profile %q: %s", d.Value, forms)
		return nil
	case d.Kind != yaml.MappingNode || len(d.Content) != 2:
		l.errAt(f, d, path, "bash_profile: takes one profile: %s", forms)
		return nil
	}
	key, val := d.Content[0].Value, d.Content[1]
	kp := joinPath(path, key)
	switch key {
	case "commands":
		cmds, ok := l.strList(f, val, kp)
		if !ok {
			return nil
		}
		if len(cmds) == 0 {
			l.errAt(f, val, kp, "commands: is empty; list the programs the agent may run (e.g. [git, jq])")
			return nil
		}
		for i, c := range cmds {
			if c == "" || strings.ContainsAny(c, " \t/;|&$`()<>") {
				l.errAt(f, val.Content[i], indexPath(kp, i), "%q is not a program name; list bare names such as git", c)
				return nil
			}
		}
		return &agent.BashProfile{Commands: cmds}
	case "sandboxed_write", "sandboxed-write":
		base, ok := l.str(f, val, kp)
		if !ok {
			return nil
		}
		bp := &agent.BashProfile{Sandboxed: true}
		if base != "" {
			abs, err := l.ws.Resolve(l.dir, base)
			if err != nil {
				l.errAt(f, val, kp, "%s", fileErr("directory", base, err))
				return nil
			}
			bp.SandboxBase = abs
		}
		return bp
	}
	l.errAt(f, d.Content[0], kp, "unknown bash profile %q: %s%s", key, forms, didYouMean(key, []string{"commands", "sandboxed_write"}))
	return nil
}

// resolve returns the absolute path of a story-relative path.
func (l *loader) resolve(rel string) string {
	p := filepath.FromSlash(rel)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

// fileErr words a failure to read a file a story names: a path outside the
// workspace and a file over the size limit say so as they are; others are
// "cannot read <what> "rel": reason".
func fileErr(what, rel string, err error) string {
	var oe *workspace.OutsideError
	var tl *workspace.TooLargeError
	switch {
	case errors.As(err, &oe):
		return oe.Error()
	case errors.As(err, &tl):
		return fmt.Sprintf("%s %v", what, tl)
	}
	return fmt.Sprintf("cannot read %s %q: %v", what, rel, unwrapPathErr(err))
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// worldTypes are the world types story-format.md §5 lists as in use.
var worldTypes = []string{"string", "int", "float", "bool", "enum", "object", "map", "list", "array"}

var worldKeys = &keySpec{v1: []string{"type", "default", "values", "description"}}

// loadWorld reads world: declarations. A mapping with type, default or
// values is a declaration; anything else is the default value itself.
func (l *loader) loadWorld(f *file, e entry) {
	es, _ := l.entries(f, e.val, "world")
	for _, w := range es {
		path := joinPath("world", w.name)
		if !l.dup(f, w, path, "world", l.worldVar(w.name) != nil) {
			continue
		}
		v := &WorldVar{Name: w.name}
		l.st.World = append(l.st.World, v)
		d := deref(w.val)
		if !isDeclaration(d) {
			if !isNull(d) {
				v.Default, _ = l.value(f, d, path)
				v.HasDefault = true
			}
			continue
		}
		fs, ok := l.fields(f, d, path, worldKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "type", &v.Type)
		v.Type = canonType(v.Type)
		strField(l, f, fs, path, "description", &v.Description)
		if t, ok := fs.get("type"); ok && v.Type != "" && !slices.Contains(worldTypes, v.Type) {
			l.warnAt(f, t.val, joinPath(path, "type"), "unknown world type %q%s: values of this key are not converted",
				v.Type, didYouMean(v.Type, worldTypes))
		}
		if vs, ok := fs.get("values"); ok {
			if items, ok := l.list(f, vs.val, joinPath(path, "values")); ok {
				for i, it := range items {
					x, _ := l.value(f, it, indexPath(joinPath(path, "values"), i))
					v.Values = append(v.Values, x)
				}
			}
		}
		if de, ok := fs.get("default"); ok && !isNull(de.val) {
			v.Default, _ = l.value(f, de.val, joinPath(path, "default"))
			v.HasDefault = true
			l.checkDefault(f, de.val, joinPath(path, "default"), v)
		}
	}
}

// isDeclaration reports whether a world value is a {type, default, values}
// declaration rather than a literal default.
func isDeclaration(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch deref(n.Content[i]).Value {
		case "type", "default", "values":
			return true
		}
	}
	return false
}

// checkDefault converts an integer default of a float key to float64 and
// warns about a default that does not fit its declared type.
func (l *loader) checkDefault(f *file, n *yaml.Node, path string, v *WorldVar) {
	fits := true
	switch x := v.Default.(type) {
	case int:
		if v.Type == "float" {
			v.Default = float64(x)
		}
		fits = v.Type != "string" && v.Type != "bool"
	case int64, uint64:
		fits = v.Type != "string" && v.Type != "bool"
	case float64:
		fits = v.Type != "string" && v.Type != "bool" && v.Type != "int"
	case string:
		fits = v.Type != "int" && v.Type != "float" && v.Type != "bool"
	case bool:
		fits = v.Type != "string" && v.Type != "int" && v.Type != "float"
	case map[string]any:
		fits = v.Type == "" || v.Type == "object" || v.Type == "map"
	case []any:
		fits = v.Type == "" || v.Type == "list" || v.Type == "array"
	}
	if !fits {
		l.warnAt(f, n, path, "default %s does not match type %q", shortValue(deref(n)), v.Type)
	}
	if v.Type == "enum" && len(v.Values) > 0 && !containsValue(v.Values, v.Default) {
		l.warnAt(f, n, path, "default %s is not one of the enum values", shortValue(deref(n)))
	}
}

// shortValue names a value for a message: a scalar quoted, else its kind.
func shortValue(n *yaml.Node) string {
	if n != nil && n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

func containsValue(vs []any, x any) bool {
	for _, v := range vs {
		if v == x {
			return true
		}
	}
	return false
}

func (l *loader) worldVar(name string) *WorldVar {
	for _, v := range l.st.World {
		if v.Name == name {
			return v
		}
	}
	return nil
}

var intentKeys = &keySpec{
	v1: []string{"title", "description", "examples", "priority", "hidden", "slots", "synonyms"},
}

var slotKeys = &keySpec{
	v1: []string{"type", "required", "default", "values", "description", "examples", "prompt", "format_hint", "validator", "synonyms", "format"},
}

// slotTypes are the slot types story-format.md §6 names, and list (a
// JSON list, or comma-separated when typed).
var slotTypes = []string{"string", "int", "bool", "enum", "float", "text", "list"}

// typeAliases are the other spellings of world and slot types Kitsoki
// accepts, by the type they mean.
var typeAliases = map[string]string{
	"str": "string", "integer": "int", "number": "float", "double": "float", "boolean": "bool",
	"obj": "object", "dict": "object",
}

// canonType is a declared type with its alias resolved.
func canonType(t string) string {
	if c, ok := typeAliases[t]; ok {
		return c
	}
	return t
}

// loadIntents reads an intents: mapping into dst. global marks the top-level
// block, whose names must be unique across files.
func (l *loader) loadIntents(f *file, n *yaml.Node, base string, dst map[string]*Intent, global bool) {
	es, _ := l.entries(f, n, base)
	for _, ie := range es {
		path := joinPath(base, ie.name)
		if global && !l.dup(f, ie, path, "intent", dst[ie.name] != nil) {
			continue
		}
		in := &Intent{Name: ie.name, Slots: map[string]*Slot{}}
		dst[ie.name] = in
		fs, ok := l.fields(f, ie.val, path, intentKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "title", &in.Title)
		strField(l, f, fs, path, "description", &in.Description)
		strListField(l, f, fs, path, "examples", &in.Examples)
		boolField(l, f, fs, path, "hidden", &in.Hidden)
		if s, ok := fs.get("synonyms"); ok {
			l.loadSynonyms(f, s.val, joinPath(path, "synonyms"), in)
		}
		if p, ok := fs.get("priority"); ok {
			if i, ok := l.integer(f, p.val, joinPath(path, "priority")); ok {
				in.Priority = int(i)
			}
		}
		if s, ok := fs.get("slots"); ok {
			l.loadSlots(f, s.val, joinPath(path, "slots"), in)
		}
	}
}

func (l *loader) loadSlots(f *file, n *yaml.Node, base string, in *Intent) {
	es, _ := l.entries(f, n, base)
	for _, se := range es {
		path := joinPath(base, se.name)
		s := &Slot{Name: se.name}
		in.Slots[se.name] = s
		in.SlotOrder = append(in.SlotOrder, se.name)
		fs, ok := l.fields(f, se.val, path, slotKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "type", &s.Type)
		s.Type = canonType(s.Type)
		if t, ok := fs.get("type"); ok && s.Type != "" && !slices.Contains(slotTypes, s.Type) {
			l.warnAt(f, t.val, joinPath(path, "type"), "unknown slot type %q%s", s.Type, didYouMean(s.Type, slotTypes))
		}
		if v, ok := fs.get("validator"); ok {
			vp := joinPath(path, "validator")
			d := deref(v.val)
			if d == nil || d.Kind != yaml.ScalarNode || isNull(d) || strings.TrimSpace(d.Value) == "" {
				l.errAt(f, d, vp, "validator: is an expression over value that must be true for the slot to be accepted (e.g. \"value != 'down'\"), got %s", kindNameOrNull(d))
			} else {
				s.ValidatorPos = l.pos(f, d)
				names := l.namesAt(f, d)
				l.addJob(func() (any, *Diagnostic) {
					g, err := l.cache.validator(d.Value, names)
					if err != nil {
						return nil, compileDiag(f, d, vp, "invalid validator", err)
					}
					return g, nil
				}, func(x any) { s.Validator = x.(*expr.Guard) })
			}
		}
		boolField(l, f, fs, path, "required", &s.Required)
		strField(l, f, fs, path, "description", &s.Description)
		strListField(l, f, fs, path, "examples", &s.Examples)
		strField(l, f, fs, path, "prompt", &s.Prompt)
		strField(l, f, fs, path, "format_hint", &s.FormatHint)
		if fm, ok := fs.get("format"); ok {
			strField(l, f, fs, path, "format", &s.Format)
			if s.Format != "" && !slices.Contains(schema.SlotFormats, s.Format) {
				l.errAt(f, fm.val, joinPath(path, "format"), "unknown slot format %q: use one of %s%s", s.Format, strings.Join(schema.SlotFormats, ", "), didYouMean(s.Format, schema.SlotFormats))
				s.Format = ""
			}
		}
		if d, ok := fs.get("default"); ok && !isNull(d.val) {
			s.Default, _ = l.value(f, d.val, joinPath(path, "default"))
			s.HasDefault = true
		}
		if vs, ok := fs.get("values"); ok {
			if items, ok := l.list(f, vs.val, joinPath(path, "values")); ok {
				for i, it := range items {
					x, _ := l.value(f, it, indexPath(joinPath(path, "values"), i))
					s.Values = append(s.Values, x)
				}
			}
		}
		if syn, ok := fs.get("synonyms"); ok {
			l.loadSlotSynonyms(f, syn.val, joinPath(path, "synonyms"), s)
		}
	}
}

var exitKeys = &keySpec{v1: []string{"description", "requires"}}

func (l *loader) loadExits(f *file, e entry) {
	es, _ := l.entries(f, e.val, "exits")
	for _, xe := range es {
		path := joinPath("exits", xe.name)
		if !l.dup(f, xe, path, "exit", l.st.Exits[xe.name] != nil) {
			continue
		}
		x := &Exit{Name: xe.name}
		l.st.Exits[xe.name] = x
		l.exitOrder = append(l.exitOrder, exitDecl{x: x, f: f, n: xe.key})
		fs, ok := l.fields(f, xe.val, path, exitKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "description", &x.Description)
		if r, ok := fs.get("requires"); ok {
			items, _ := l.list(f, r.val, joinPath(path, "requires"))
			for i, it := range items {
				p := indexPath(joinPath(path, "requires"), i)
				if s, ok := l.str(f, it, p); ok {
					x.Requires = append(x.Requires, s)
					l.worldRefs = append(l.worldRefs, &nodeRef{f: f, n: it, path: p, value: s})
				}
			}
		}
	}
}

// InlineRoot is the name of a root state written inline under root:.
const InlineRoot = "root"

func (l *loader) loadRoot(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	d := deref(e.val)
	if d != nil && d.Kind == yaml.MappingNode {
		// An inline root state: a state named InlineRoot.
		if l.st.States[InlineRoot] != nil {
			l.errAt(f, d, "root", "the inline root state is named %q, and states: declares that name too; rename that state or name it in root:", InlineRoot)
			return
		}
		s := &State{Name: InlineRoot, On: map[string][]*Arm{}, Pos: l.pos(f, d)}
		l.st.States[InlineRoot] = s
		l.stateOrder = append(l.stateOrder, InlineRoot)
		l.loadState(f, d, "root", s)
		l.rootRef = &nodeRef{f: f, n: d, path: "root", value: InlineRoot}
		return
	}
	s, ok := l.str(f, e.val, "root")
	if !ok {
		return
	}
	l.rootRef = &nodeRef{f: f, n: d, path: "root", value: s}
}
