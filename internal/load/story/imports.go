package story

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// Story composition (imports:, exits:, exports:). An import is folded into
// the importing story at load time, before the typed loader reads it: the
// imported story's files (its root file and includes, with its own imports
// folded first) are parsed once, their names are renamed under the alias
// by internal/load/compose (on the YAML tree, sharing every node that keeps
// its names), and the renamed documents are then loaded like included
// files. Each document carries the compose.Chain its templates and
// expressions are compiled with, so their world.k references and menu
// helper names are renamed on expr-lang's AST and pongo2's tokens.
//
// The importer gets a wrapper state <alias> whose on_enter writes world_in;
// a transition into it from outside enters the import's entry state with
// the import's private world reset to its defaults. Hosts, agents,
// agent_plugins, host_plugins and providers share one namespace; a name the
// importer (or an earlier import) declares wins.
//
// The files: imports.go reads imports: entries and resolves their sources;
// imports_unit.go reads an imported story; imports_fold.go folds it and
// makes the wrapper; imports_check.go checks what needs the whole story.

var (
	importKeys        = &keySpec{v1: []string{"source", "version", "entry", "world_in", "exits", "host_bindings", "intents", "overrides", "hosts"}}
	importExitKeys    = &keySpec{v1: []string{"to", "set"}}
	importIntentKeys  = &keySpec{v1: []string{"export", "import"}}
	importOverrideKey = &keySpec{v1: []string{"states", "intents", "prompts"}}
	exportsKeys       = &keySpec{v1: []string{"intents"}}
	aliasRx           = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
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
	requires map[string][]string   // exits.<name>.requires
	nonZero  map[string]bool       // world keys whose default is not the zero value
	exitList []string
	exports  map[string]bool
	hosts    []string // its hosts and its imports' (the allow-list it contributes)
	own      []string // its own files' hosts: (what hosts: declared checks against)
	root     string
	wrappers map[string]*importWrap // wrapper state → what it imports
	// fallback is its routing.free_form_fallback, in its own names (nil
	// when it declares none).
	fallback *FreeFormFallback

	// chain renames the text of its own files (and of what is written in
	// its names: its wrappers, the exit sets it appends) once it is
	// imported; chains lists every chain of its files, its imports' too,
	// which each fold of it extends.
	chain  *compose.Chain
	chains []*compose.Chain
}

// unitFile is one document to load: a file of a unit (or the importer's
// file for a wrapper state and overrides), and the directory its relative
// paths are written against.
type unitFile struct {
	f *file
	// doc is a document the fold made (a wrapper state, overrides); nil
	// for a file of the imported story, parsed again when it is loaded.
	doc *yaml.Node
	dir string
	// steps are the folds to apply to the document, innermost import
	// first.
	steps []foldStep
	again *reparse // the file parsed again, started ahead of loading

	// chain renames the references of its templates and expressions
	// (and of the base views its states extend).
	chain *compose.Chain

	wrapper string // for an import's wrapper state: its alias
	key     *yaml.Node
	path    string
}

// importWrap is an import's wrapper state, in some unit's namespace.
type importWrap struct {
	alias, source, version, entry string
	intents                       map[string]string // bare child intent → renamed
	fallback                      *FreeFormFallback // the imported story's routing.free_form_fallback, renamed
	world                         []string          // its private world keys, in the importer's names
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

// chain is the chain of text written in the importer's names (nil for the
// root story).
func (sc *importScope) chain() *compose.Chain {
	if sc.u == nil {
		return nil
	}
	return sc.u.chain
}

// loadImports folds the root story's imports: (from any of its files).
func (l *loader) loadImports(f *file, e entry) {
	sc := &importScope{f: f, dir: l.dir, stack: []string{l.st.File}}
	l.importFiles = append(l.importFiles, l.foldImports(sc, e)...)
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
		l.readImportExits(f, ex, d)
	}
	if hb, ok := fs.get("host_bindings"); ok {
		d.bindings, _ = l.entries(f, hb.val, joinPath(path, "host_bindings"))
	}
	if in, ok := fs.get("intents"); ok {
		l.readImportIntents(f, in, d)
	}
	if ov, ok := fs.get("overrides"); ok {
		l.readImportOverrides(f, ov, d)
	}
	if hm, ok := fs.get("hosts"); ok {
		l.readImportHosts(f, hm, d)
	}
	return d, true
}

// readImportExits reads imports.<alias>.exits: each exit's to: and set:.
func (l *loader) readImportExits(f *file, ex entry, d *importDef) {
	es, _ := l.entries(f, ex.val, joinPath(d.path, "exits"))
	for _, xe := range es {
		xp := joinPath(joinPath(d.path, "exits"), xe.name)
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

// readImportIntents reads imports.<alias>.intents: export and import.
func (l *loader) readImportIntents(f *file, in entry, d *importDef) {
	ip := joinPath(d.path, "intents")
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

// readImportOverrides reads imports.<alias>.overrides: states, intents
// and prompts.
func (l *loader) readImportOverrides(f *file, ov entry, d *importDef) {
	op := joinPath(d.path, "overrides")
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

// readImportHosts reads imports.<alias>.hosts: inherit or declared.
func (l *loader) readImportHosts(f *file, hm entry, d *importDef) {
	s, ok := l.str(f, hm.val, joinPath(d.path, "hosts"))
	if !ok {
		return
	}
	switch s {
	case "", "inherit", "declared":
		d.hostsMode, d.hostsModeKey = s, deref(hm.val)
	default:
		l.errAt(f, hm.val, joinPath(d.path, "hosts"), "hosts must be inherit (the imported story's hosts: join this story's) or declared (every host the imported story lists must be in this story's hosts:), got %q", s)
	}
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
	return []*unitFile{{f: sc.f, doc: doc, dir: sc.dir, wrapper: d.alias, key: d.key, path: d.path, chain: sc.chain()}}
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
	out := searchPath(l.opts)
	add := func(d string) { out = addDir(out, d) }
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

// SearchPath is the part of the @kitsoki/NAME search path that the load
// options and the environment set, in order: the WithStoriesPath
// directories, KITSOKI_STORIES_PATH, $KITSOKI_REPO/stories (absolute,
// each once). The directories found from the importer (a .kitsoki-root
// marker's stories/) and the library come after them and are not in it.
// A story bundle records it, so a worker looks imports up where the
// client did.
func SearchPath(opts ...Option) []string {
	o := options{lookupEnv: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lookupEnv == nil {
		o.lookupEnv = os.LookupEnv
	}
	return searchPath(o)
}

func searchPath(o options) []string {
	var out []string
	for _, d := range o.storiesPath {
		out = addDir(out, d)
	}
	if v, ok := o.lookupEnv("KITSOKI_STORIES_PATH"); ok {
		for _, d := range filepath.SplitList(v) {
			out = addDir(out, d)
		}
	}
	if v, ok := o.lookupEnv("KITSOKI_REPO"); ok && v != "" {
		out = addDir(out, filepath.Join(v, "stories"))
	}
	return out
}

// addDir appends d, made absolute, to dirs unless it is empty or there.
func addDir(dirs []string, d string) []string {
	if d == "" {
		return dirs
	}
	if a, err := filepath.Abs(d); err == nil {
		d = a
	}
	if slices.Contains(dirs, d) {
		return dirs
	}
	return append(dirs, d)
}
