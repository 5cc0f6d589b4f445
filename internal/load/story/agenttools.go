package story

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
)

var (
	agentToolKeys  = &keySpec{v1: []string{"name", "description", "surfaces", "input_schema", "output_schema", "annotations"}}
	annotationKeys = &keySpec{v1: []string{"read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}}
	manifestKeys   = &keySpec{v1: []string{"agent_tools"}}
)

// loadAgentTools reads a plugin's agent_tools: list, or the manifest: file
// beside its binary holding the same list, into d.AgentTools. Every limit
// of the plugin-agent-tools design is checked here, and each exposed name
// (kitsoki_<slug>_<name>) must be unique across the story.
func (l *loader) loadAgentTools(f *file, fs fieldSet, path string, d *agent.Declaration) {
	at, hasTools := fs.get("agent_tools")
	mf, hasManifest := fs.get("manifest")
	if !hasTools && !hasManifest {
		return
	}
	if d.Plugin != agent.PluginSubprocess {
		e := at
		if !hasTools {
			e = mf
		}
		if msg := refuseTools(d.Plugin); msg != "" {
			l.errAt(f, e.key, joinPath(path, e.name), "%s", msg)
		}
		return
	}
	if hasTools && hasManifest {
		l.errAt(f, mf.key, joinPath(path, "manifest"), "declare agent_tools: or manifest:, not both")
		return
	}
	src, list := f, at.val
	if hasManifest {
		var ok bool
		if src, list, d.Manifest, ok = l.manifest(f, mf, path, d); !ok {
			return
		}
	}
	d.AgentTools = l.readAgentTools(src, list, joinPath(path, "agent_tools"), d.Alias)
}

// refuseTools says why a plugin of type pluginType cannot declare tools,
// or "" when its type is unknown (already reported).
func refuseTools(pluginType string) string {
	switch pluginType {
	case agent.PluginMCPHTTP:
		return "mcp_http plugins cannot declare agent tools: kitsoki only calls their ask tool and does not run them; contribute tools from a subprocess plugin"
	case agent.PluginClaudeCLI, agent.PluginInProcess, agent.PluginLocalLLM, agent.PluginAnthropic, agent.PluginOpenAI, agent.PluginCodexCLI, agent.PluginCopilotCLI:
		return fmt.Sprintf("%s is a builtin plugin and cannot declare agent tools: only subprocess plugins contribute tools", pluginType)
	}
	return ""
}

// manifest opens the manifest: file, resolved from the directory of the
// plugin's binary (a bare command is looked up in PATH), and returns it
// with its agent_tools: node and absolute path.
func (l *loader) manifest(f *file, mf entry, path string, d *agent.Declaration) (*file, *yaml.Node, string, bool) {
	p := joinPath(path, "manifest")
	name, ok := l.str(f, mf.val, p)
	if !ok {
		return nil, nil, "", false
	}
	if strings.TrimSpace(name) == "" {
		l.errAt(f, mf.val, p, "manifest: needs the manifest's file name, relative to the plugin's binary")
		return nil, nil, "", false
	}
	if d.Command == "" {
		return nil, nil, "", false // "subprocess plugin requires command:" is reported
	}
	bin := d.Command
	inPath := false
	switch {
	case strings.ContainsRune(bin, '/'):
		if !filepath.IsAbs(bin) {
			bin = filepath.Join(l.dir, bin)
		}
	default:
		lp, err := exec.LookPath(bin)
		if err != nil {
			l.errAt(f, mf.val, p, "cannot find command %q in PATH, so its manifest %q cannot be located beside it", d.Command, name)
			return nil, nil, "", false
		}
		bin, inPath = lp, true
	}
	abs := filepath.FromSlash(name)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(bin), abs)
	}
	abs = filepath.Clean(abs)
	// The manifest is read only inside the story's workspace, or beside a
	// binary found through PATH (an installed plugin): a story cannot point
	// it elsewhere by naming a command path outside the workspace.
	if _, err := l.ws.Resolve(l.dir, abs); err != nil {
		if !inPath {
			l.errAt(f, mf.val, p, "manifest %v; a manifest must be inside the workspace, or beside a plugin binary found in PATH", renamed(err, name))
			return nil, nil, "", false
		}
		beside, berr := l.ws.At(filepath.Dir(bin))
		if berr == nil {
			_, berr = beside.Resolve(filepath.Dir(bin), name)
		}
		if berr != nil {
			l.errAt(f, mf.val, p, "manifest %q must be beside the plugin's binary %s (or inside the workspace %s)", name, bin, l.ws.Dir())
			return nil, nil, "", false
		}
	}
	if _, err := l.ws.Stat(abs); err != nil {
		l.errAt(f, mf.val, p, "cannot read manifest %s: %v", l.relPath(abs), unwrapPathErr(err))
		return nil, nil, "", false
	}
	m := l.newFile(abs)
	doc, diags := parseFile(m)
	l.diags = append(l.diags, diags...)
	if len(diags) > 0 {
		return nil, nil, "", false
	}
	if doc == nil {
		l.errAt(f, mf.val, p, "manifest %s is empty; it must hold agent_tools:", m.rel)
		return nil, nil, "", false
	}
	mfs, ok := l.fields(m, doc, "", manifestKeys)
	if !ok {
		return nil, nil, "", false
	}
	list, ok := mfs.get("agent_tools")
	if !ok {
		l.errAt(m, doc, "", "a plugin manifest must hold agent_tools:")
		return nil, nil, "", false
	}
	return m, list.val, abs, true
}

// relPath renders abs relative to the story directory when it can.
func (l *loader) relPath(abs string) string {
	if r, err := filepath.Rel(l.dir, abs); err == nil {
		return filepath.ToSlash(r)
	}
	return abs
}

// readAgentTools reads and checks a list of tool declarations.
func (l *loader) readAgentTools(f *file, n *yaml.Node, path, alias string) []agent.ToolDeclaration {
	items, ok := l.list(f, n, path)
	if !ok {
		return nil
	}
	if len(items) > agent.MaxAgentTools {
		l.errAt(f, n, path, "%d tools declared; a plugin may declare at most %d", len(items), agent.MaxAgentTools)
	}
	if l.toolNames == nil {
		l.toolNames = map[string]string{}
	}
	var out []agent.ToolDeclaration
	local := map[string]string{}
	for i, it := range items {
		p := indexPath(path, i)
		t, ok := l.readAgentTool(f, it, p)
		if !ok {
			continue
		}
		if prev, dup := local[t.Name]; dup {
			l.errAt(f, it, p, "tool %q is declared twice (also at %s)", t.Name, prev)
			continue
		}
		local[t.Name] = p
		exposed := agent.ExposedToolName(alias, t.Name)
		if prev, taken := l.toolNames[exposed]; taken {
			l.errAt(f, it, p, "exposed tool name %q is also derived from %s; rename one of the tools or plugin aliases", exposed, prev)
			continue
		}
		l.toolNames[exposed] = p
		out = append(out, t)
	}
	return out
}

// readAgentTool reads one declaration; ok is false if anything is wrong.
func (l *loader) readAgentTool(f *file, n *yaml.Node, path string) (agent.ToolDeclaration, bool) {
	t := agent.ToolDeclaration{Annotations: agent.DefaultToolAnnotations}
	before := len(l.diags)
	fs, ok := l.fields(f, n, path, agentToolKeys)
	if !ok {
		return t, false
	}
	at := deref(n)
	if e, ok := fs.get("name"); !ok {
		l.errAt(f, at, path, "name: is required")
	} else if s, ok := l.str(f, e.val, joinPath(path, "name")); ok {
		t.Name = s
		if !agent.ValidToolName(s) {
			l.errAt(f, e.val, joinPath(path, "name"), "tool name %q must match ^[a-z0-9][a-z0-9_]{0,31}$ (lowercase letters, digits and _, at most 32 characters, not starting with _)", s)
		}
	}
	if e, ok := fs.get("description"); !ok {
		l.errAt(f, at, path, "description: is required (it tells the agent what the tool does)")
	} else if s, ok := l.str(f, e.val, joinPath(path, "description")); ok {
		t.Description = s
		switch {
		case strings.TrimSpace(s) == "":
			l.errAt(f, e.val, joinPath(path, "description"), "description is empty (it tells the agent what the tool does)")
		case len(s) > agent.MaxToolDescriptionBytes:
			l.errAt(f, e.val, joinPath(path, "description"), "description is %d bytes; the limit is %d", len(s), agent.MaxToolDescriptionBytes)
		}
	}
	l.readSurfaces(f, fs, at, path, &t)
	if e, ok := fs.get("input_schema"); !ok || isNull(e.val) {
		l.errAt(f, at, path, "input_schema: is required (a JSON Schema with type: object)")
	} else {
		t.InputSchema = l.toolSchema(f, e, joinPath(path, "input_schema"))
	}
	if e, ok := fs.get("output_schema"); ok && !isNull(e.val) {
		t.OutputSchema = l.toolSchema(f, e, joinPath(path, "output_schema"))
	}
	if e, ok := fs.get("annotations"); ok {
		l.readAnnotations(f, e, joinPath(path, "annotations"), &t.Annotations)
	}
	return t, len(l.diags) == before
}

// readSurfaces reads surfaces: one or both task surfaces, no duplicates.
func (l *loader) readSurfaces(f *file, fs fieldSet, at *yaml.Node, path string, t *agent.ToolDeclaration) {
	e, ok := fs.get("surfaces")
	if !ok {
		l.errAt(f, at, path, "surfaces: is required (%s, or both)", strings.Join(agent.ToolSurfaces, ", "))
		return
	}
	p := joinPath(path, "surfaces")
	list, ok := l.strList(f, e.val, p)
	if !ok {
		return
	}
	if len(list) == 0 {
		l.errAt(f, e.val, p, "surfaces: is empty; name %s, or both", strings.Join(agent.ToolSurfaces, ", "))
		return
	}
	items := deref(e.val).Content
	for i, s := range list {
		switch {
		case !slices.Contains(agent.ToolSurfaces, s):
			l.errAt(f, items[i], indexPath(p, i), "%q is not a task surface; plugin tools may target %s", s, strings.Join(agent.ToolSurfaces, " and "))
		case slices.Contains(list[:i], s):
			l.errAt(f, items[i], indexPath(p, i), "surface %q is listed twice", s)
		default:
			t.Surfaces = append(t.Surfaces, s)
		}
	}
}

// toolSchema reads a schema written in YAML and returns its compact JSON.
// It must be a mapping, at most 64 KiB serialized, compile, and have an
// object root.
func (l *loader) toolSchema(f *file, e entry, path string) json.RawMessage {
	d := deref(e.val)
	if d.Kind != yaml.MappingNode {
		l.errAt(f, d, path, "expected a JSON Schema object with type: object, got %s", kindName(d))
		return nil
	}
	v, ok := l.value(f, d, path)
	if !ok {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		l.errAt(f, d, path, "cannot be written as JSON: %v", err)
		return nil
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(raw) > agent.MaxToolSchemaBytes {
		l.errAt(f, d, path, "serialized schema is %d bytes; the limit is %d (64 KiB)", len(raw), agent.MaxToolSchemaBytes)
		return nil
	}
	if m, _ := v.(map[string]any); m["type"] != "object" {
		l.errAt(f, d, path, "the schema's root must be an object schema (type: object), got type %s", describeType(m["type"]))
		return nil
	}
	name := lastSegment(path)
	if _, err := schema.CompileDocument(name, raw); err != nil {
		l.errAt(f, d, path, "does not compile: %s", strings.TrimPrefix(err.Error(), name+": "))
		return nil
	}
	return raw
}

func describeType(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// readAnnotations reads the MCP hints; omitted ones keep their defaults.
func (l *loader) readAnnotations(f *file, e entry, path string, a *agent.ToolAnnotations) {
	fs, ok := l.fields(f, e.val, path, annotationKeys)
	if !ok {
		return
	}
	boolField(l, f, fs, path, "read_only_hint", &a.ReadOnly)
	boolField(l, f, fs, path, "destructive_hint", &a.Destructive)
	boolField(l, f, fs, path, "idempotent_hint", &a.Idempotent)
	boolField(l, f, fs, path, "open_world_hint", &a.OpenWorld)
}
