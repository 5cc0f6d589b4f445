package story

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"go.yaml.in/yaml/v3"
)

// Story composition (imports:, exits:, exports:). An import is folded into
// the importing story at load time, before the typed loader reads it: the
// imported story's files (its root file and includes, with its own imports
// folded first) are parsed, every name in them is renamed under the alias,
// and the renamed documents are then loaded like included files. Renaming:
//
//   - states: a top-level state s becomes <alias>.s, and every literal
//     target naming a state of the imported story follows;
//   - world keys: k becomes <alias>__k, in world:, in the keys of set:,
//     increment:, bind: and relevant_world:, and in every world.k reference
//     inside templates and guards;
//   - intents: i becomes <alias>__i (on: keys, default_intent, literal
//     emit_intent, view intent:), except the importer's intents.export and
//     intents.import names, which stay bare;
//   - host_interfaces: n becomes <alias>__n, and iface.n.<op> follows;
//   - @exit:X becomes the importer's exits.X.to, with its set: appended to
//     the arm's effects.
//
// The importer gets a wrapper state <alias> whose on_enter writes world_in;
// a transition into it enters the import's entry state. Hosts, agents,
// agent_plugins, host_plugins and providers share one namespace; a name the
// importer (or an earlier import) declares wins.

var (
	importKeys        = &keySpec{v1: []string{"source", "version", "entry", "world_in", "exits", "host_bindings", "intents", "overrides", "hosts"}}
	importExitKeys    = &keySpec{v1: []string{"to", "set"}}
	importIntentKeys  = &keySpec{v1: []string{"export", "import"}}
	importOverrideKey = &keySpec{v1: []string{"states", "intents", "prompts"}}
	exportsKeys       = &keySpec{v1: []string{"intents"}}
	aliasRx           = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
)

// sharedSections are the top-level keys of an imported story loaded under
// their own names; namespacedSections are renamed under the alias. Every
// other top-level key of an imported file (app, root, exits, exports,
// imports, include, routing) is the import machinery's or the importer's.
var (
	sharedSections     = []string{"hosts", "agents", "agent_plugins", "host_plugins", "providers"}
	namespacedSections = []string{"world", "intents", "host_interfaces", "states"}
)

// unit is one story read for folding: its files' documents, in its own
// namespace (its own imports already folded in), and the names they
// declare.
type unit struct {
	abs      string
	dir      string
	files    []*unitFile
	states   map[string]bool // top-level state names
	world    map[string]bool
	intents  map[string]bool // top-level and state-level intents
	ifaces   map[string]bool
	exits    map[string]*yaml.Node // declared exits → their key node
	exitList []string
	exports  map[string]bool
	hosts    []string // its hosts and its imports' (the allow-list it contributes)
	own      []string // its own files' hosts: (what hosts: declared checks against)
	root     string
	wrappers map[string]*importWrap // wrapper state → what it imports
	// fallback is its routing.free_form_fallback, in its own names (nil
	// when it declares none).
	fallback *FreeFormFallback
}

// unitFile is one document to load: a file of a unit (or the importer's
// file for a wrapper state and overrides), and the directory its relative
// paths are written against.
type unitFile struct {
	f   *file
	doc *yaml.Node // a mapping of top-level keys
	dir string

	// texts renames world references in text read from the imported
	// story's other files (base views), innermost import first.
	texts []func(string) string

	wrapper string // for an import's wrapper state: its alias
	key     *yaml.Node
	path    string
}

// importWrap is an import's wrapper state, in some unit's namespace.
type importWrap struct {
	alias, source, version, entry string
	intents                       map[string]string // bare child intent → renamed
	fallback                      *FreeFormFallback // the imported story's routing.free_form_fallback, renamed
}

// importScope is the importer an import is folded into.
type importScope struct {
	f     *file  // the file holding imports:
	dir   string // the importer's directory
	stack []string
	// names the importer declares so far (nil for the root story, whose
	// names are checked once it is loaded)
	u *unit
}

// loadImports folds the root story's imports: (from any of its files).
func (l *loader) loadImports(f *file, e entry) {
	sc := &importScope{f: f, dir: l.dir, stack: []string{l.st.File}}
	for _, uf := range l.foldImports(sc, e) {
		l.importFiles = append(l.importFiles, uf)
	}
}

// foldImports folds every entry of an imports: mapping into the scope,
// returning the documents to load.
func (l *loader) foldImports(sc *importScope, e entry) []*unitFile {
	es, _ := l.entries(sc.f, e.val, "imports")
	var out []*unitFile
	for _, ie := range es {
		out = append(out, l.foldImport(sc, ie)...)
	}
	return out
}

// importDef is one imports.<alias> entry as read.
type importDef struct {
	alias        string
	key          *yaml.Node
	path         string
	source       string
	sourceNode   *yaml.Node
	version      string
	entry        string
	entryNode    *yaml.Node
	worldIn      []entry
	exits        map[string]importExit
	exitOrder    []entry
	bindings     []entry
	export       []entry // intent names, with their nodes
	imports      []entry
	overStates   []entry
	overIntents  []entry
	overPrompts  []entry
	hostsMode    string
	hostsModeKey *yaml.Node
}

type importExit struct {
	to    string
	toN   *yaml.Node
	set   *yaml.Node // the set: mapping, nil when absent
	entry entry
}

func (l *loader) readImportDef(f *file, ie entry) (*importDef, bool) {
	path := joinPath("imports", ie.name)
	d := &importDef{alias: ie.name, key: ie.key, path: path, exits: map[string]importExit{}}
	if !aliasRx.MatchString(ie.name) || strings.Contains(ie.name, "__") {
		l.errAt(f, ie.key, path, "import alias %q must be a name (a letter, then letters, digits, - or _, without \"__\"): it prefixes the imported story's states (%s.<state>) and world keys (%s__<key>)", ie.name, ie.name, ie.name)
		return nil, false
	}
	fs, unknown, ok := l.fieldsU(f, ie.val, path, importKeys)
	if !ok || unknown > 0 {
		return d, false
	}
	src, ok := fs.get("source")
	if !ok {
		l.errAt(f, ie.key, path, "source: is required (a path to the imported story, or @kitsoki/<name>)")
		return d, false
	}
	if s, ok := l.str(f, src.val, joinPath(path, "source")); ok && strings.TrimSpace(s) != "" {
		d.source, d.sourceNode = strings.TrimSpace(s), deref(src.val)
	} else {
		if ok {
			l.errAt(f, src.val, joinPath(path, "source"), "source is empty: write a path to the imported story, or @kitsoki/<name>")
		}
		return d, false
	}
	strField(l, f, fs, path, "version", &d.version)
	if en, ok := fs.get("entry"); ok {
		if s, ok := l.str(f, en.val, joinPath(path, "entry")); ok {
			d.entry, d.entryNode = normStateName(s), deref(en.val)
		}
	}
	if wi, ok := fs.get("world_in"); ok {
		d.worldIn, _ = l.entries(f, wi.val, joinPath(path, "world_in"))
	}
	if ex, ok := fs.get("exits"); ok {
		es, _ := l.entries(f, ex.val, joinPath(path, "exits"))
		for _, xe := range es {
			xp := joinPath(joinPath(path, "exits"), xe.name)
			xf, ok := l.fields(f, xe.val, xp, importExitKeys)
			if !ok {
				continue
			}
			ix := importExit{entry: xe}
			to, ok := xf.get("to")
			if !ok {
				l.errAt(f, xe.key, xp, "to: is required (the state of this story the exit %s leads to)", xe.name)
				continue
			}
			if s, ok := l.str(f, to.val, joinPath(xp, "to")); ok {
				ix.to, ix.toN = strings.TrimSpace(s), deref(to.val)
			}
			if st, ok := xf.get("set"); ok {
				if n := deref(st.val); n != nil && n.Kind == yaml.MappingNode {
					ix.set = n
				} else if !isNull(n) {
					l.errAt(f, n, joinPath(xp, "set"), "expected a mapping of world keys to values, got %s", kindName(n))
				}
			}
			d.exits[xe.name] = ix
			d.exitOrder = append(d.exitOrder, xe)
		}
	}
	if hb, ok := fs.get("host_bindings"); ok {
		d.bindings, _ = l.entries(f, hb.val, joinPath(path, "host_bindings"))
	}
	if in, ok := fs.get("intents"); ok {
		ip := joinPath(path, "intents")
		xf, _ := l.fields(f, in.val, ip, importIntentKeys)
		for _, k := range []string{"export", "import"} {
			x, ok := xf.get(k)
			if !ok {
				continue
			}
			items, _ := l.list(f, x.val, joinPath(ip, k))
			for i, it := range items {
				if s, ok := l.str(f, it, indexPath(joinPath(ip, k), i)); ok && s != "" {
					en := entry{name: s, key: deref(it)}
					if k == "export" {
						d.export = append(d.export, en)
					} else {
						d.imports = append(d.imports, en)
					}
				}
			}
		}
	}
	if ov, ok := fs.get("overrides"); ok {
		op := joinPath(path, "overrides")
		of, _ := l.fields(f, ov.val, op, importOverrideKey)
		if x, ok := of.get("states"); ok {
			d.overStates, _ = l.entries(f, x.val, joinPath(op, "states"))
		}
		if x, ok := of.get("intents"); ok {
			d.overIntents, _ = l.entries(f, x.val, joinPath(op, "intents"))
		}
		if x, ok := of.get("prompts"); ok {
			d.overPrompts, _ = l.entries(f, x.val, joinPath(op, "prompts"))
		}
	}
	if hm, ok := fs.get("hosts"); ok {
		if s, ok := l.str(f, hm.val, joinPath(path, "hosts")); ok {
			switch s {
			case "", "inherit", "declared":
				d.hostsMode, d.hostsModeKey = s, deref(hm.val)
			default:
				l.errAt(f, hm.val, joinPath(path, "hosts"), "hosts must be inherit (the imported story's hosts: join this story's) or declared (every host the imported story lists must be in this story's hosts:), got %q", s)
			}
		}
	}
	return d, true
}

// foldImport reads one import and returns its renamed documents plus the
// wrapper state's.
func (l *loader) foldImport(sc *importScope, ie entry) []*unitFile {
	f := sc.f
	d, ok := l.readImportDef(f, ie)
	if d == nil {
		return nil
	}
	if !ok {
		return l.placeholder(sc, d)
	}
	if sc.u != nil && sc.u.states[d.alias] {
		l.errAt(f, d.key, d.path, "import alias %q is also a state of this story: rename the alias or the state", d.alias)
		return nil
	}
	abs, ok := l.resolveImportSource(sc, d)
	if !ok {
		return l.placeholder(sc, d)
	}
	if i := slices.Index(sc.stack, abs); i >= 0 {
		chain := make([]string, 0, len(sc.stack)-i+1)
		for _, p := range sc.stack[i:] {
			chain = append(chain, l.relPath(p))
		}
		chain = append(chain, l.relPath(abs))
		l.errAt(f, d.sourceNode, joinPath(d.path, "source"), "import cycle: %s", strings.Join(chain, " → "))
		return l.placeholder(sc, d)
	}
	child := l.readUnit(abs, append(slices.Clone(sc.stack), abs))
	if child == nil {
		return l.placeholder(sc, d)
	}
	return l.foldUnit(sc, d, child)
}

// placeholder stands for an import that failed (its error is reported):
// the wrapper state alone, so targets naming the alias are not reported
// as unknown states too.
func (l *loader) placeholder(sc *importScope, d *importDef) []*unitFile {
	wrapper := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addPair(wrapper, "description", scalar("import "+d.alias+" (not loaded)"))
	states := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	states.Content = append(states.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.alias, Line: d.key.Line, Column: d.key.Column}, wrapper)
	doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addPair(doc, "states", states)
	if sc.u != nil {
		sc.u.states[d.alias] = true
	}
	return []*unitFile{{f: sc.f, doc: doc, dir: sc.dir, wrapper: d.alias, key: d.key, path: d.path}}
}

// checkExitTo checks an imports.<alias>.exits.<name>.to against the
// importer's states and exits.
func (l *loader) checkExitTo(ref nodeRef, states map[string]bool, exits map[string]*yaml.Node) {
	v := ref.value
	switch {
	case v == ".":
		l.errAt(ref.f, ref.n, ref.path, "an exit cannot stay in the imported story: name a state of this story, or @exit:<name>")
	case v == "":
		l.errAt(ref.f, ref.n, ref.path, "to is empty: name a state of this story, or @exit:<name>")
	case strings.HasPrefix(v, "@exit:"):
		if _, ok := exits[strings.TrimPrefix(v, "@exit:")]; !ok {
			l.errAt(ref.f, ref.n, ref.path, "%s: this story declares no exit %q in exits:", v, strings.TrimPrefix(v, "@exit:"))
		}
	case isTemplated(v):
		l.errAt(ref.f, ref.n, ref.path, "to must name a state, not a template")
	default:
		if !states[firstSeg(normStateName(v))] {
			l.errAt(ref.f, ref.n, ref.path, "%s", l.unknownState(v, normStateName(v)))
		}
	}
}

// resolveImportSource turns source: into the imported story's root file:
// a directory means its app.yaml; @kitsoki/NAME is looked up on the
// stories search path. The file must be inside the workspace.
func (l *loader) resolveImportSource(sc *importScope, d *importDef) (string, bool) {
	f, srcPath := sc.f, joinPath(d.path, "source")
	var cand string
	if name, ok := strings.CutPrefix(d.source, "@kitsoki/"); ok {
		if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			l.errAt(f, d.sourceNode, srcPath, "%q is not a story name: write @kitsoki/<name>, looked up as <dir>/<name>/app.yaml on the stories search path", d.source)
			return "", false
		}
		dirs := l.storiesPath(sc.dir)
		for _, dir := range dirs {
			p := filepath.Join(dir, name, "app.yaml")
			if st, err := l.ws.Stat(p); err == nil && st.Mode().IsRegular() {
				cand = p
				break
			}
		}
		if cand == "" {
			tried := "(empty: pass --stories-path DIR, set KITSOKI_STORIES_PATH or KITSOKI_REPO, or list story_dirs in .kitsoki.yaml)"
			if len(dirs) > 0 {
				tried = strings.Join(dirs, ", ")
			}
			l.errAt(f, d.sourceNode, srcPath, "cannot resolve %s: no %s/app.yaml in the stories search path %s", d.source, name, tried)
			return "", false
		}
	} else {
		cand = filepath.FromSlash(d.source)
		if !filepath.IsAbs(cand) {
			cand = filepath.Join(sc.dir, cand)
		}
		cand = filepath.Clean(cand)
		st, err := l.ws.Stat(cand)
		if err == nil && st.IsDir() {
			cand = filepath.Join(cand, "app.yaml")
			st, err = l.ws.Stat(cand)
		}
		if err != nil || !st.Mode().IsRegular() {
			l.errAt(f, d.sourceNode, srcPath, "cannot read imported story %q: no story file at %s (source names a story directory holding app.yaml, or its .yaml file)", d.source, l.relPath(cand))
			return "", false
		}
	}
	if _, err := l.ws.Resolve(sc.dir, cand); err != nil {
		l.errAt(f, d.sourceNode, srcPath, "imported story %v", renamed(err, d.source))
		return "", false
	}
	return cand, true
}

// storiesPath is where @kitsoki/NAME is looked up, in order: the
// WithStoriesPath directories (--stories-path), KITSOKI_STORIES_PATH
// (colon-separated), $KITSOKI_REPO/stories, then the stories/ directory
// beside the nearest .kitsoki-root marker above the importer.
func (l *loader) storiesPath(from string) []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		if a, err := filepath.Abs(d); err == nil {
			d = a
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, d := range l.opts.storiesPath {
		add(d)
	}
	if v, ok := l.opts.lookupEnv("KITSOKI_STORIES_PATH"); ok {
		for _, d := range filepath.SplitList(v) {
			add(d)
		}
	}
	if v, ok := l.opts.lookupEnv("KITSOKI_REPO"); ok && v != "" {
		add(filepath.Join(v, "stories"))
	}
	for d := from; ; {
		if _, err := l.ws.Stat(filepath.Join(d, workspace.RootMarker)); err == nil {
			add(filepath.Join(d, "stories"))
			break
		}
		p := filepath.Dir(d)
		if p == d {
			break
		}
		d = p
	}
	add(l.opts.library)
	return out
}

// readUnit parses the story at abs (root file and includes), folds its own
// imports, and collects the names it declares. It returns nil when the
// root file cannot be read.
func (l *loader) readUnit(abs string, stack []string) *unit {
	u := &unit{abs: abs, dir: filepath.Dir(abs), states: map[string]bool{}, world: map[string]bool{},
		intents: map[string]bool{}, ifaces: map[string]bool{}, exits: map[string]*yaml.Node{},
		exports: map[string]bool{}, wrappers: map[string]*importWrap{}}
	rootF := l.unitFile(abs)
	rootF.parse()
	if rootF.doc == nil {
		if len(rootF.parseDiags) == 0 && !l.unitReported[rootF] {
			l.diags = append(l.diags, Diagnostic{Pos: Pos{File: rootF.rel}, Message: "imported story file is empty"})
		}
		l.unitDiags(rootF)
		return nil
	}
	seen := map[string]bool{abs: true}
	queue := []*file{rootF}
	var importsAt []struct {
		f *file
		e entry
	}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		f.parse()
		l.unitDiags(f)
		if f.doc == nil {
			continue
		}
		es, ok := l.entries(f, deepCopy(f.doc), "")
		if !ok {
			continue
		}
		doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, e := range es {
			switch e.name {
			case "app":
				// The imported story's identity is its own.
			case "routing":
				// The importer's routing governs the run; only the imported
				// story's free-form fallback applies, to its own states.
				if u.fallback == nil {
					u.fallback = l.unitFallback(f, e.val)
				}
			case "root":
				if s, ok := l.str(f, e.val, "root"); ok {
					u.root = normStateName(s)
				}
			case "exits":
				xs, _ := l.entries(f, e.val, "exits")
				for _, x := range xs {
					if _, dup := u.exits[x.name]; !dup {
						u.exits[x.name] = x.key
						u.exitList = append(u.exitList, x.name)
					}
				}
			case "exports":
				ef, _ := l.fields(f, e.val, "exports", exportsKeys)
				if x, ok := ef.get("intents"); ok {
					items, _ := l.list(f, x.val, "exports.intents")
					for i, it := range items {
						if s, ok := l.str(f, it, indexPath("exports.intents", i)); ok {
							u.exports[s] = true
						}
					}
				}
			case "include":
				queue = append(queue, l.unitIncludes(f, u.dir, e, seen)...)
			case "imports":
				importsAt = append(importsAt, struct {
					f *file
					e entry
				}{f, e})
			default:
				doc.Content = append(doc.Content, e.key, e.val)
				l.collectNames(u, f, e)
			}
		}
		u.files = append(u.files, &unitFile{f: f, doc: doc, dir: u.dir})
	}
	u.own = slices.Clone(u.hosts)
	for _, ia := range importsAt {
		sc := &importScope{f: ia.f, dir: u.dir, stack: stack, u: u}
		es, _ := l.entries(ia.f, ia.e.val, "imports")
		for _, ie := range es {
			u.files = append(u.files, l.foldImport(sc, ie)...)
		}
	}
	return u
}

// unitFile returns the file at abs, registered for diagnostics, its parse
// started on the workers. A story imported several times is parsed once:
// each fold works on its own copy of the document.
func (l *loader) unitFile(abs string) *file {
	if f, ok := l.unitFiles[abs]; ok {
		return f
	}
	rel, err := filepath.Rel(l.dir, abs)
	if err != nil {
		rel = abs
	}
	f := &file{rel: filepath.ToSlash(rel), abs: abs, ws: l.ws}
	if _, ok := l.fileOrder[f.rel]; !ok {
		l.fileOrder[f.rel] = len(l.fileOrder)
	}
	if l.unitFiles == nil {
		l.unitFiles = map[string]*file{}
	}
	l.unitFiles[abs] = f
	l.work.submit(&job{run: f.parseJob})
	return f
}

// unitDiags reports a file's read and syntax errors, once however often
// it is imported.
func (l *loader) unitDiags(f *file) {
	if l.unitReported == nil {
		l.unitReported = map[*file]bool{}
	}
	if !l.unitReported[f] {
		l.unitReported[f] = true
		l.diags = append(l.diags, f.parseDiags...)
	}
}

// unitIncludes resolves an imported file's include: globs against the
// imported story's directory.
func (l *loader) unitIncludes(f *file, dir string, e entry, seen map[string]bool) []*file {
	var globs []entry
	if d := deref(e.val); d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
		globs = []entry{{name: d.Value, key: d}}
	} else {
		items, _ := l.list(f, e.val, "include")
		for i, it := range items {
			if s, ok := l.str(f, it, indexPath("include", i)); ok {
				globs = append(globs, entry{name: s, key: deref(it)})
			}
		}
	}
	var out []*file
	for _, g := range globs {
		if strings.TrimSpace(g.name) == "" {
			l.errAt(f, g.key, "include", "empty include pattern")
			continue
		}
		pattern := filepath.FromSlash(g.name)
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(dir, pattern)
		}
		if _, err := l.ws.Resolve(dir, literalPrefix(pattern)); err != nil {
			l.errAt(f, g.key, "include", "%v", renamed(err, g.name))
			continue
		}
		matches, err := l.ws.Glob(pattern)
		if err != nil {
			l.errAt(f, g.key, "include", "bad include pattern %q: %v", g.name, err)
			continue
		}
		n := 0
		for _, m := range matches {
			st, err := l.ws.Stat(m)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			if _, err := l.ws.Resolve(dir, m); err != nil {
				l.errAt(f, g.key, "include", "%v", renamed(err, l.relPath(m)))
				continue
			}
			n++
			if !seen[m] {
				seen[m] = true
				out = append(out, l.unitFile(m))
			}
		}
		if n == 0 {
			l.errAt(f, g.key, "include", "include %q matches no file", g.name)
		}
	}
	return out
}

// collectNames records the names a top-level section of a unit file
// declares.
func (l *loader) collectNames(u *unit, f *file, e entry) {
	v := deref(e.val)
	if v == nil {
		return
	}
	keys := func(n *yaml.Node, into map[string]bool, norm bool) {
		n = deref(n)
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if norm {
				k = normStateName(k)
			}
			into[k] = true
		}
	}
	switch e.name {
	case "world":
		keys(v, u.world, false)
	case "intents":
		keys(v, u.intents, false)
	case "host_interfaces":
		keys(v, u.ifaces, false)
	case "states":
		keys(v, u.states, true)
		if v.Kind == yaml.MappingNode {
			for i := 1; i < len(v.Content); i += 2 {
				collectStateIntents(v.Content[i], u.intents)
			}
		}
	case "hosts":
		if v.Kind == yaml.SequenceNode {
			for _, it := range v.Content {
				if it = deref(it); it != nil && it.Kind == yaml.ScalarNode && !slices.Contains(u.hosts, it.Value) {
					u.hosts = append(u.hosts, it.Value)
				}
			}
		}
	}
}

// collectStateIntents adds a state's (and its nested states') intents:
// keys.
func collectStateIntents(n *yaml.Node, into map[string]bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "intents":
			if m := deref(n.Content[i+1]); m != nil && m.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(m.Content); j += 2 {
					into[m.Content[j].Value] = true
				}
			}
		case "states":
			if m := deref(n.Content[i+1]); m != nil && m.Kind == yaml.MappingNode {
				for j := 1; j < len(m.Content); j += 2 {
					collectStateIntents(m.Content[j], into)
				}
			}
		}
	}
}

// foldUnit renames the child's documents under the alias, applies the
// importer's bindings, overrides and exit mappings, and adds the wrapper
// state. The names it adds are recorded in the scope's unit.
func (l *loader) foldUnit(sc *importScope, d *importDef, child *unit) []*unitFile {
	f := sc.f
	entryState := d.entry
	if entryState == "" {
		entryState = child.root
	}
	if entryState == "" {
		l.errAt(f, d.key, d.path, "entry: is required (the state of the imported story a transition into %s enters)", d.alias)
		return nil
	}
	if !child.states[firstSeg(entryState)] {
		l.errAt(f, d.entryNode, joinPath(d.path, "entry"), "the imported story %s has no state %q%s", l.relPath(child.abs), entryState, didYouMean(entryState, sortedKeys(child.states)))
		return nil
	}
	bare, lifted := map[string]bool{}, map[string]bool{}
	for _, x := range d.export {
		bare[x.name] = true
	}
	for _, x := range d.imports {
		if !child.exports[x.name] {
			msg := "it is not an intent of the imported story"
			if child.intents[x.name] {
				msg = "the imported story does not list it in exports.intents"
			}
			l.errAt(f, x.key, joinPath(d.path, "intents.import"), "cannot import intent %q: %s%s", x.name, msg, didYouMean(x.name, sortedKeys(child.exports)))
			continue
		}
		lifted[x.name] = true
	}
	for _, x := range d.exitOrder {
		if _, ok := child.exits[x.name]; !ok {
			l.errAt(f, x.key, joinPath(joinPath(d.path, "exits"), x.name), "the imported story declares no exit %q%s", x.name, didYouMean(x.name, child.exitList))
		}
	}
	// Overrides replace whole states and intents of the child, in the
	// child's namespace; they are read from the importer's file.
	var overDoc *yaml.Node
	replace := func(section string, over []entry, have map[string]bool, kind string) {
		if len(over) == 0 {
			return
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, o := range over {
			name := o.name
			if section == "states" {
				name = normStateName(name)
			}
			if !have[name] {
				l.errAt(f, o.key, joinPath(joinPath(d.path, "overrides."+section), o.name), "the imported story has no %s %q to override%s", kind, o.name, didYouMean(name, sortedKeys(have)))
				continue
			}
			for _, uf := range child.files {
				removeSectionKey(uf.doc, section, name, section == "states")
			}
			m.Content = append(m.Content, o.key, deepCopy(o.val))
		}
		if len(m.Content) > 0 {
			if overDoc == nil {
				overDoc = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			overDoc.Content = append(overDoc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}, m)
		}
	}
	replace("states", d.overStates, child.states, "state")
	replace("intents", d.overIntents, child.intents, "intent")
	files := child.files
	if overDoc != nil {
		files = append(files, &unitFile{f: f, doc: overDoc, dir: child.dir})
	}
	prompts := map[string]string{}
	for _, p := range d.overPrompts {
		s, ok := l.str(f, p.val, joinPath(joinPath(d.path, "overrides.prompts"), p.name))
		if !ok || s == "" {
			continue
		}
		to := filepath.Join(sc.dir, filepath.FromSlash(s))
		if _, err := l.ws.Stat(to); err != nil {
			l.errAt(f, p.val, joinPath(joinPath(d.path, "overrides.prompts"), p.name), "cannot read prompt file %q: %v", s, unwrapPathErr(err))
			continue
		}
		rel, err := filepath.Rel(child.dir, to)
		if err != nil {
			rel = to
		}
		prompts[p.name] = filepath.ToSlash(rel)
	}
	bindings := map[string]*yaml.Node{}
	for _, b := range d.bindings {
		bp := joinPath(joinPath(d.path, "host_bindings"), b.name)
		if !child.ifaces[b.name] {
			l.errAt(f, b.key, bp, "the imported story declares no host interface %q%s", b.name, didYouMean(b.name, sortedKeys(child.ifaces)))
			continue
		}
		if s, ok := l.str(f, b.val, bp); ok {
			if strings.HasPrefix(s, InterfaceNamespace) || !handlerNameRx.MatchString(s) {
				l.errAt(f, b.val, bp, "%q is not a handler name: write the handler that answers iface.%s.<op>, e.g. host.run", s, b.name)
				continue
			}
			bindings[b.name] = deref(b.val)
		}
	}
	if d.hostsMode == "declared" {
		l.hostChecks = append(l.hostChecks, hostCheck{f: f, n: d.hostsModeKey, path: joinPath(d.path, "hosts"), alias: d.alias, hosts: child.hosts, u: sc.u})
	}
	for _, x := range d.exitOrder {
		ix, ok := d.exits[x.name]
		if !ok || ix.toN == nil {
			continue
		}
		ref := nodeRef{f: f, n: ix.toN, path: joinPath(joinPath(joinPath(d.path, "exits"), x.name), "to"), value: ix.to}
		if sc.u != nil {
			l.checkExitTo(ref, sc.u.states, sc.u.exits)
		} else {
			l.exitToChecks = append(l.exitToChecks, ref)
		}
	}
	r := &renamer{l: l, d: d, alias: d.alias, child: child, bare: bare, lifted: lifted, prompts: prompts, reported: map[string]bool{}, seen: map[*yaml.Node]bool{}, arms: map[*yaml.Node]bool{}}
	for _, uf := range files {
		applyBindings(uf.doc, bindings)
		r.f = uf.f
		r.doc(uf.doc)
		uf.texts = append(uf.texts, r.text)
	}
	// The wrapper state, in the importer's namespace.
	wrapper := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addPair(wrapper, "description", scalar("import "+d.alias+" ("+l.relPath(child.abs)+")"))
	if len(d.worldIn) > 0 {
		set := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, w := range d.worldIn {
			if !child.world[w.name] {
				l.errAt(f, w.key, joinPath(joinPath(d.path, "world_in"), w.name), "the imported story declares no world key %q%s", w.name, didYouMean(w.name, sortedKeys(child.world)))
				continue
			}
			set.Content = append(set.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.alias + "__" + w.name, Line: w.key.Line, Column: w.key.Column}, w.val)
		}
		if len(set.Content) > 0 {
			eff := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: d.key.Line, Column: d.key.Column}
			addPair(eff, "set", set)
			addPair(wrapper, "on_enter", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}})
		}
	}
	states := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	states.Content = append(states.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.alias, Line: d.key.Line, Column: d.key.Column}, wrapper)
	wdoc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addPair(wdoc, "states", states)
	files = append(files, &unitFile{f: f, doc: wdoc, dir: sc.dir, wrapper: d.alias, key: d.key, path: d.path})

	w := &importWrap{alias: d.alias, source: l.relPath(child.abs), version: d.version, entry: d.alias + "." + entryState, intents: map[string]string{}}
	if fb := child.fallback; fb != nil {
		w.fallback = &FreeFormFallback{State: d.alias + "." + normStateName(fb.State), Intent: r.intent(fb.Intent), Pos: fb.Pos}
	}
	for name := range child.intents {
		if nn := r.intent(name); nn != name {
			w.intents[name] = nn
		}
	}
	// Record the folded names in the importer's unit (nested imports) or
	// the loader (the root story).
	wraps := map[string]*importWrap{d.alias: w}
	for name, cw := range child.wrappers {
		nw := &importWrap{alias: cw.alias, source: cw.source, version: cw.version, entry: d.alias + "." + cw.entry, intents: r.renameValues(cw.intents)}
		if fb := cw.fallback; fb != nil {
			nw.fallback = &FreeFormFallback{State: d.alias + "." + fb.State, Intent: r.intent(fb.Intent), Pos: fb.Pos}
		}
		wraps[d.alias+"."+name] = nw
	}
	if sc.u != nil {
		u := sc.u
		u.states[d.alias] = true
		for k := range child.world {
			u.world[d.alias+"__"+k] = true
		}
		for k := range child.intents {
			u.intents[r.intent(k)] = true
		}
		for k := range lifted {
			u.intents[k] = true
		}
		for k := range child.ifaces {
			u.ifaces[d.alias+"__"+k] = true
		}
		for _, h := range child.hosts {
			if !slices.Contains(u.hosts, h) {
				u.hosts = append(u.hosts, h)
			}
		}
		for k, v := range wraps {
			u.wrappers[k] = v
		}
	} else {
		for k, v := range wraps {
			l.wrappers[k] = v
		}
		for _, x := range d.export {
			l.exportChecks = append(l.exportChecks, nodeRef{f: f, n: x.key, path: joinPath(d.path, "intents.export"), value: x.name})
		}
	}
	if sc.u != nil {
		for _, x := range d.export {
			if !sc.u.intents[x.name] {
				l.errAt(f, x.key, joinPath(d.path, "intents.export"), "cannot export intent %q: this story declares no such intent%s", x.name, didYouMean(x.name, sortedKeys(sc.u.intents)))
			}
		}
	}
	return files
}

// hostCheck is a hosts: declared import, checked once the importer's hosts
// are known.
type hostCheck struct {
	f     *file
	n     *yaml.Node
	path  string
	alias string
	hosts []string
	u     *unit // the importer when it is itself imported; nil for the root
}

// renamer renames one imported unit's documents under its alias.
type renamer struct {
	l        *loader
	f        *file
	d        *importDef
	alias    string
	child    *unit
	bare     map[string]bool // the importer's exported intents: never renamed
	lifted   map[string]bool // intents.import: renamed, and also declared (and handled) under the bare name
	prompts  map[string]string
	reported map[string]bool
	seen     map[*yaml.Node]bool // nodes renamed (a node shared by aliases is renamed once)
	arms     map[*yaml.Node]bool // the arms of on: mappings (the rest holding target: are effect items)
}

func (r *renamer) key(k string) string { return r.alias + "__" + k }

func (r *renamer) intent(name string) string {
	if r.child.intents[name] && !r.bare[name] {
		return r.key(name)
	}
	return name
}

func (r *renamer) renameValues(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = r.intent(v)
	}
	return out
}

var (
	worldRefRx     = regexp.MustCompile(`\bworld\.([A-Za-z_][A-Za-z0-9_]*)`)
	worldIndexRx   = regexp.MustCompile(`\bworld\[\s*("|')([^"']+)("|')\s*\]`)
	ifaceInvokeRx  = regexp.MustCompile(`^iface\.([A-Za-z][A-Za-z0-9_]*)(\..*)?$`)
	worldKeyedKeys = []string{"set", "increment", "bind", "unset", "append"}
)

// text rewrites world.<key> references to the child's keys in a template,
// guard or plain string.
// menuCallRx is a menu helper called with a literal intent name (views).
var menuCallRx = regexp.MustCompile(`\b(available|blocked|blocked_reason|intent_status)(\(\s*["'])([A-Za-z_][A-Za-z0-9_-]*)(["']\s*\))`)

func (r *renamer) text(s string) string {
	if strings.Contains(s, "(") && menuCallRx.MatchString(s) {
		// available('drive') names the child's intent: child__drive
		s = menuCallRx.ReplaceAllStringFunc(s, func(m string) string {
			sm := menuCallRx.FindStringSubmatch(m)
			return sm[1] + sm[2] + r.intent(sm[3]) + sm[4]
		})
	}
	if !strings.Contains(s, "world") {
		return s
	}
	s = worldRefRx.ReplaceAllStringFunc(s, func(m string) string {
		k := m[len("world."):]
		if r.child.world[k] {
			return "world." + r.key(k)
		}
		return m
	})
	return worldIndexRx.ReplaceAllStringFunc(s, func(m string) string {
		sm := worldIndexRx.FindStringSubmatch(m)
		if r.child.world[sm[2]] {
			return "world[" + sm[1] + r.key(sm[2]) + sm[3] + "]"
		}
		return m
	})
}

func (r *renamer) worldKey(k string) string {
	if r.child.world[k] {
		return r.key(k)
	}
	return k
}

// doc renames one document's top-level sections.
func (r *renamer) doc(doc *yaml.Node) {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], deref(doc.Content[i+1])
		if v == nil {
			continue
		}
		if slices.Contains(namespacedSections, k.Value) && k.Value != "intents" { // intentKeyed marks its own
			if r.seen[v] {
				continue
			}
			r.seen[v] = true
		}
		switch k.Value {
		case "world":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					v.Content[j].Value = r.worldKey(v.Content[j].Value)
				}
			}
		case "intents":
			if v.Kind == yaml.MappingNode {
				// An intent the importer exports down is the importer's:
				// the imported story's declaration of it gives way.
				for j := 0; j+1 < len(v.Content); j += 2 {
					if r.bare[v.Content[j].Value] {
						v.Content = append(v.Content[:j:j], v.Content[j+2:]...)
						j -= 2
					}
				}
				r.intentKeyed(v)
			}
		case "host_interfaces":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					v.Content[j].Value = r.key(v.Content[j].Value)
				}
			}
		case "states":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					v.Content[j].Value = r.alias + "." + normStateName(v.Content[j].Value)
					r.walk(v.Content[j+1], nil)
				}
			}
		default:
			if slices.Contains(sharedSections, k.Value) {
				r.walk(v, nil)
			} else if !slices.Contains(namespacedSections, k.Value) {
				// A key the loader reports (a later key, or unknown):
				// world references are still the child's.
				r.walk(v, nil)
			}
		}
	}
}

// walk renames inside a state, arm, effect or view node. arm is the
// mapping holding the current node when it is an arm or effect (where an
// exit's set: is appended).
func (r *renamer) walk(n *yaml.Node, arm *yaml.Node) {
	n = deref(n)
	if n == nil || r.seen[n] {
		return
	}
	r.seen[n] = true
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value = r.text(n.Value)
	case yaml.SequenceNode:
		for _, it := range n.Content {
			r.walk(it, nil)
		}
	case yaml.MappingNode:
		// An exit's set: is appended once the holder is renamed: it is
		// the importer's, in the importer's names.
		var exitSet, exitAt *yaml.Node
		defer func() {
			if exitSet != nil {
				appendSet(n, exitSet, exitAt, r.arms[n])
			}
		}()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if v == nil {
				continue
			}
			switch k.Value {
			case "target", "on_error":
				if v.Kind == yaml.ScalarNode {
					if set := r.target(v, k.Value == "target"); set != nil {
						exitSet, exitAt = set, v
					}
					continue
				}
			case "on", "intents":
				// arms by intent; state-level intent declarations
				if v.Kind == yaml.MappingNode {
					r.intentKeyed(v)
					continue
				}
			case "pending_plan_path":
				// contextual_routing's world path: its first key is the child's
				if v.Kind == yaml.ScalarNode {
					head, rest, _ := strings.Cut(strings.TrimPrefix(v.Value, "world."), ".")
					if v.Value = r.worldKey(head); rest != "" {
						v.Value += "." + rest
					}
					continue
				}
			case "emit_intent", "default_intent", "intent", "plan_accept_intent", "plan_refine_intent", "room_chat":
				if v.Kind == yaml.ScalarNode {
					if isTemplated(v.Value) {
						v.Value = r.text(v.Value)
					} else {
						v.Value = r.intent(v.Value)
					}
					continue
				}
			case "relevant_world":
				if v.Kind == yaml.SequenceNode {
					for _, it := range v.Content {
						if it = deref(it); it != nil && it.Kind == yaml.ScalarNode {
							it.Value = r.worldKey(it.Value)
						}
					}
					continue
				}
			case "invoke":
				if v.Kind == yaml.ScalarNode {
					if m := ifaceInvokeRx.FindStringSubmatch(v.Value); m != nil && r.child.ifaces[m[1]] {
						v.Value = InterfaceNamespace + r.key(m[1]) + m[2]
					} else {
						v.Value = r.text(v.Value)
					}
					continue
				}
			case "with":
				// A handler's payload: only world references are renamed
				// (its keys are the handler's), and prompt paths swapped.
				r.with(v)
				continue
			case "slots":
				r.walk(v, nil)
				continue
			}
			if slices.Contains(worldKeyedKeys, k.Value) {
				switch v.Kind {
				case yaml.MappingNode:
					for j := 0; j+1 < len(v.Content); j += 2 {
						v.Content[j].Value = r.worldKey(v.Content[j].Value)
						r.walk(v.Content[j+1], nil)
					}
					continue
				case yaml.SequenceNode:
					for _, it := range v.Content {
						if it = deref(it); it != nil && it.Kind == yaml.ScalarNode {
							it.Value = r.worldKey(it.Value)
						}
					}
					continue
				case yaml.ScalarNode:
					if k.Value == "unset" {
						v.Value = r.worldKey(v.Value)
						continue
					}
				}
			}
			r.walk(v, n)
		}
	}
}

// intentKeyed renames a mapping keyed by intent names (intents:, on:). A
// lifted intent (intents.import) keeps its renamed entry and gets a copy
// under its bare name, so both names reach the same arms.
func (r *renamer) intentKeyed(m *yaml.Node) {
	if r.seen[m] {
		return
	}
	r.seen[m] = true
	var extra []*yaml.Node
	for j := 0; j+1 < len(m.Content); j += 2 {
		k := m.Content[j]
		name := k.Value
		k.Value = r.intent(name)
		if v := deref(m.Content[j+1]); v != nil {
			// on: values are arms (a list, or the one-arm mapping)
			if v.Kind == yaml.MappingNode {
				r.arms[v] = true
			}
			for _, it := range v.Content {
				if it = deref(it); v.Kind == yaml.SequenceNode && it != nil && it.Kind == yaml.MappingNode {
					r.arms[it] = true
				}
			}
		}
		r.walk(m.Content[j+1], nil)
		if r.lifted[name] && r.child.intents[name] {
			bk := *k
			bk.Value = name
			extra = append(extra, &bk, deepCopy(m.Content[j+1]))
		}
	}
	m.Content = append(m.Content, extra...)
}

// with renames inside an invoke's with: mapping.
func (r *renamer) with(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if v != nil && v.Kind == yaml.ScalarNode && (k.Value == "prompt" || k.Value == "prompt_path") {
				if to, ok := r.prompts[v.Value]; ok {
					v.Value = to
					continue
				}
			}
			r.walkPlain(v)
		}
		return
	}
	r.walkPlain(n)
}

// walkPlain renames world references in every scalar under n.
func (r *renamer) walkPlain(n *yaml.Node) {
	n = deref(n)
	if n == nil || r.seen[n] {
		return
	}
	r.seen[n] = true
	if n.Kind == yaml.ScalarNode {
		n.Value = r.text(n.Value)
		return
	}
	for _, c := range n.Content {
		r.walkPlain(c)
	}
}

// target renames a target: or on_error: value; for an arm's target: into
// an exit the importer maps with set:, it returns that set: to append.
func (r *renamer) target(v *yaml.Node, isTarget bool) *yaml.Node {
	raw := strings.TrimSpace(v.Value)
	switch {
	case raw == "" || raw == ".":
	case isTemplated(raw):
		v.Value = r.text(v.Value)
	case strings.HasPrefix(raw, "@exit:"):
		name := strings.TrimPrefix(raw, "@exit:")
		x, ok := r.d.exits[name]
		if !ok {
			if !r.reported[name] {
				r.reported[name] = true
				if _, declared := r.child.exits[name]; declared {
					r.l.errAt(r.f, v, "", "@exit:%s: imports.%s.exits does not map the imported story's exit %q (add imports.%s.exits.%s.to: <state of this story>)", name, r.alias, name, r.alias, name)
				} else {
					r.l.errAt(r.f, v, "", "@exit:%s referenced but not declared in exits:", name)
				}
			}
			v.Value = "." // reported: not reported again as a target
			return nil
		}
		v.Value = x.to
		r.l.exitTargets[v] = true // a bad to: is reported there, once
		if isTarget {
			return x.set
		}
	default:
		norm := normStateName(raw)
		if r.child.states[firstSeg(norm)] {
			v.Value = r.alias + "." + norm
		}
	}
	return nil
}

// appendSet appends {set: <copy of set>} to the effects: of arm (an arm
// mapping), creating the list when missing; an effect item holding target:
// (an on_complete transition) gets the set: itself when it has none. The
// copy is placed at the target (at), in the imported story's file, where
// the loader reports what is wrong with it.
func appendSet(arm, set, at *yaml.Node, isArm bool) {
	c := deepCopy(set)
	placeAt(c, at.Line, at.Column)
	if !isArm {
		for i := 0; i+1 < len(arm.Content); i += 2 {
			if arm.Content[i].Value == "set" {
				return
			}
		}
		addPair(arm, "set", c)
		return
	}
	eff := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: at.Line, Column: at.Column}
	addPair(eff, "set", c)
	for i := 0; i+1 < len(arm.Content); i += 2 {
		if arm.Content[i].Value == "effects" {
			l := deref(arm.Content[i+1])
			if l != nil && l.Kind == yaml.SequenceNode {
				l.Content = append(l.Content, eff)
				return
			}
			if isNull(l) {
				arm.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}}
				return
			}
			return
		}
	}
	addPair(arm, "effects", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}})
}

// placeAt moves n and everything under it to line:col.
func placeAt(n *yaml.Node, line, col int) {
	n.Line, n.Column = line, col
	for _, c := range n.Content {
		placeAt(c, line, col)
	}
}

// applyBindings sets the default: of each bound host interface.
// bindingFor is the importer's binding of interface name: its own, else
// (for an interface of a story the child imports, alias__name) the binding
// of the nearest shorter name, so binding ticket also binds bf__ticket and
// bf__pr__ticket unless they are bound by name.
func bindingFor(bindings map[string]*yaml.Node, name string) (*yaml.Node, bool) {
	for {
		if b, ok := bindings[name]; ok {
			return b, true
		}
		_, rest, ok := strings.Cut(name, "__")
		if !ok {
			return nil, false
		}
		name = rest
	}
}

func applyBindings(doc *yaml.Node, bindings map[string]*yaml.Node) {
	if len(bindings) == 0 {
		return
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "host_interfaces" {
			continue
		}
		m := deref(doc.Content[i+1])
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(m.Content); j += 2 {
			b, ok := bindingFor(bindings, m.Content[j].Value)
			if !ok {
				continue
			}
			body := deref(m.Content[j+1])
			if body == nil || body.Kind != yaml.MappingNode {
				body = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				m.Content[j+1] = body
			}
			// The importer's handler name, placed in the imported story's
			// file (it was checked where it is written).
			c := deepCopy(b)
			placeAt(c, m.Content[j].Line, m.Content[j].Column)
			set := false
			for k := 0; k+1 < len(body.Content); k += 2 {
				if body.Content[k].Value == "default" {
					body.Content[k+1] = c
					set = true
				}
			}
			if !set {
				addPair(body, "default", c)
			}
		}
	}
}

// removeSectionKey drops key name from the section mapping of doc.
func removeSectionKey(doc *yaml.Node, section, name string, norm bool) {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != section {
			continue
		}
		m := deref(doc.Content[i+1])
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(m.Content); j += 2 {
			k := m.Content[j].Value
			if norm {
				k = normStateName(k)
			}
			if k == name {
				m.Content = append(m.Content[:j:j], m.Content[j+2:]...)
				j -= 2
			}
		}
	}
}

// rewritePaths makes the relative file paths of an imported document
// (prompt files, schemas, scripts, system prompt files, cassettes) relative
// to the root story's directory, so they name the imported story's files.
func (l *loader) rewritePaths(n *yaml.Node, dir string) {
	n = deref(n)
	if n == nil || dir == l.dir {
		return
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			l.rewritePaths(c, dir)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if v == nil {
				continue
			}
			if v.Kind != yaml.ScalarNode {
				l.rewritePaths(v, dir)
				continue
			}
			if !slices.Contains(pathKeys, k.Value) || v.Value == "" || isTemplated(v.Value) || filepath.IsAbs(filepath.FromSlash(v.Value)) || strings.Contains(v.Value, "\n") {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(v.Value))
			if k.Value == "prompt" {
				// with.prompt is a file only when one is there.
				if st, err := l.ws.Stat(p); err != nil || !st.Mode().IsRegular() {
					continue
				}
			}
			if rel, err := filepath.Rel(l.dir, p); err == nil {
				v.Value = filepath.ToSlash(rel)
			}
		}
	}
}

// pathKeys are the keys whose values are files relative to the story
// directory.
var pathKeys = []string{"prompt", "prompt_path", "schema", "script", "system_prompt_path", "cassette", "manifest"}

// finishImports checks what needs the whole story (alias collisions,
// exported intents, hosts: declared) and marks the wrapper states.
func (l *loader) finishImports() {
	if len(l.exitToChecks) > 0 {
		states := make(map[string]bool, len(l.st.States))
		for k := range l.st.States {
			states[k] = true
		}
		exits := map[string]*yaml.Node{}
		for k := range l.st.Exits {
			exits[k] = nil
		}
		for _, ref := range l.exitToChecks {
			l.checkExitTo(ref, states, exits)
		}
	}
	for _, x := range l.exportChecks {
		if l.st.Intents[x.value] == nil {
			names := make([]string, 0, len(l.st.Intents))
			for k := range l.st.Intents {
				names = append(names, k)
			}
			sort.Strings(names)
			l.errAt(x.f, x.n, x.path, "cannot export intent %q: this story declares no such intent%s", x.value, didYouMean(x.value, names))
		}
	}
	for _, hc := range l.hostChecks {
		have := l.rootHosts
		if hc.u != nil {
			have = hc.u.own
		}
		var missing []string
		for _, h := range hc.hosts {
			if !slices.Contains(have, h) {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			l.errAt(hc.f, hc.n, hc.path, "hosts: declared, but the imported story %s uses hosts this story does not list: %s (add them to hosts:, or drop hosts: declared)", hc.alias, strings.Join(missing, ", "))
		}
	}
	for name, w := range l.wrappers {
		st := l.st.States[name]
		if st == nil {
			continue
		}
		st.Import = &Import{Alias: w.alias, Source: w.source, Version: w.version, Entry: w.entry, Intents: w.intents, Fallback: w.fallback}
	}
	// An entry that is itself an import enters that import's entry.
	for _, st := range l.st.States {
		if st.Import == nil {
			continue
		}
		for range 32 {
			e := l.st.States[st.Import.Entry]
			if e == nil || e.Import == nil || e == st {
				break
			}
			st.Import.Entry = e.Import.Entry
		}
	}
}

// loadExports checks a story's own exports: (the intents an importer may
// lift into its table with intents.import).
func (l *loader) loadExports(f *file, e entry) {
	fs, ok := l.fields(f, e.val, "exports", exportsKeys)
	if !ok {
		return
	}
	if x, ok := fs.get("intents"); ok {
		items, _ := l.list(f, x.val, "exports.intents")
		for i, it := range items {
			p := indexPath("exports.intents", i)
			if s, ok := l.str(f, it, p); ok {
				l.exportRefs = append(l.exportRefs, nodeRef{f: f, n: deref(it), path: p, value: s})
			}
		}
	}
}

func (l *loader) checkExports() {
	for _, x := range l.exportRefs {
		if l.st.Intents[x.value] == nil {
			names := make([]string, 0, len(l.st.Intents))
			for k := range l.st.Intents {
				names = append(names, k)
			}
			sort.Strings(names)
			l.errAt(x.f, x.n, x.path, "exports.intents names %q, which is not a declared intent%s", x.value, didYouMean(x.value, names))
		}
	}
}

func firstSeg(p string) string {
	if i := strings.IndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return p
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func addPair(m *yaml.Node, k string, v *yaml.Node) {
	m.Content = append(m.Content, scalar(k), v)
}

// deepCopy copies n. A node reached several times (through YAML aliases)
// is copied once and stays shared, so the copy is as large as the text
// (an alias bomb stays small) and the renamer, which renames each node
// once, never renames a node twice.
func deepCopy(n *yaml.Node) *yaml.Node {
	return copyNode(n, map[*yaml.Node]*yaml.Node{})
}

func copyNode(n *yaml.Node, memo map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := memo[n]; ok {
		return c
	}
	c := *n
	memo[n] = &c
	if n.Alias != nil {
		c.Alias = copyNode(n.Alias, memo)
	}
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = copyNode(x, memo)
		}
	}
	return &c
}
