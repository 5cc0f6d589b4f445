package story

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// readUnit parses the story at abs (root file and includes), folds its own
// imports, and collects the names it declares. It returns nil when the
// root file cannot be read.
func (l *loader) readUnit(abs string, stack []string) *unit {
	u := &unit{abs: abs, dir: filepath.Dir(abs), states: map[string]bool{}, world: map[string]bool{},
		intents: map[string]bool{}, ifaces: map[string]bool{}, exits: map[string]*yaml.Node{}, requires: map[string][]string{}, nonZero: map[string]bool{},
		exports: map[string]bool{}, wrappers: map[string]*importWrap{}, chain: &compose.Chain{}}
	u.chains = []*compose.Chain{u.chain}
	rootF := l.unitFile(abs)
	rootF.parse()
	if rootF.doc == nil && !rootF.taken { // taken: read for an earlier import
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
		l.parseAhead(queue)
		f.parse()
		l.unitDiags(f)
		doc := l.takeDoc(f)
		if doc == nil {
			continue
		}
		l.expandUnitPhases(f, doc, !f.phased)
		f.phased = true
		es, ok := l.entries(f, doc, "")
		if !ok {
			continue
		}
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
						u.requires[x.name] = requiredKeys(x.val)
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
				l.collectNames(u, f, e)
			}
		}
		u.files = append(u.files, &unitFile{f: f, dir: u.dir, chain: u.chain})
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

// takeDoc is the parsed document of an imported file, read for its names
// and dropped once they are read: the file is parsed again when its folded
// document is loaded (unitDoc), so an import's trees are not all held at
// once. A file imported twice is parsed again for the second import.
func (l *loader) takeDoc(f *file) *yaml.Node {
	if f.taken {
		return parseData(f.data)
	}
	f.taken = true
	doc := f.doc
	f.doc = nil
	return doc
}

// unitMachinery are the top-level sections of an imported file that are
// the import machinery's (read by readUnit); the others are folded and
// loaded.
var unitMachinery = []string{"app", "routing", "root", "exits", "exports", "include", "imports"}

// reparse is a parse of an imported file's content again, started on the
// workers a few files ahead of the loader (loadImported).
type reparse struct {
	once sync.Once
	data []byte
	doc  *yaml.Node
}

func (r *reparse) get() *yaml.Node {
	r.once.Do(func() { r.doc = parseData(r.data) })
	return r.doc
}

func (r *reparse) job() (any, *Diagnostic) {
	r.get()
	return nil, nil
}

// reparseAhead starts parsing again, on the workers, the next imported
// files to load (as many as there are workers).
func (l *loader) reparseAhead(next []*unitFile) {
	for _, uf := range next[:min(len(next), l.lookahead)] {
		if uf.doc == nil && uf.again == nil {
			uf.again = &reparse{data: uf.f.data}
			l.work.submit(&job{run: uf.again.job})
		}
	}
}

// unitDoc is an imported file parsed again: a mapping of the sections
// loaded from it, for one import to fold in place. Its problems were
// reported when it was first read.
func (l *loader) unitDoc(uf *unitFile) *yaml.Node {
	f := uf.f
	if uf.again == nil {
		uf.again = &reparse{data: f.data}
	}
	parsed := uf.again.get()
	uf.again = nil
	l.expandUnitPhases(f, parsed, false)
	doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	n := len(l.diags)
	es, _ := l.entries(f, parsed, "")
	l.diags = l.diags[:n]
	for _, e := range es {
		if !slices.Contains(unitMachinery, e.name) {
			doc.Content = append(doc.Content, e.key, e.val)
		}
	}
	return doc
}

// unitFile returns the file at abs, registered for diagnostics, parsed
// when the import reading it asks (parseAhead). A story imported
// several times is read and checked once.
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
		nonZeroDefaults(v, u.nonZero)
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

// requiredKeys reads an exits: entry's requires: list (the loader checks
// its shape where it loads the story's exits).
func requiredKeys(x *yaml.Node) []string {
	x = deref(x)
	if x == nil || x.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(x.Content); i += 2 {
		if x.Content[i].Value != "requires" {
			continue
		}
		if r := deref(x.Content[i+1]); r != nil && r.Kind == yaml.SequenceNode {
			for _, it := range r.Content {
				if it = deref(it); it != nil && it.Kind == yaml.ScalarNode {
					out = append(out, it.Value)
				}
			}
		}
	}
	return out
}

// nonZeroDefaults adds the world keys whose default: is not the zero
// value of a type: not "", 0, false, null, [] or {}.
func nonZeroDefaults(w *yaml.Node, into map[string]bool) {
	if w.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(w.Content); i += 2 {
		d := deref(w.Content[i+1])
		if d == nil || d.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(d.Content); j += 2 {
			if d.Content[j].Value != "default" {
				continue
			}
			v := deref(d.Content[j+1])
			switch {
			case v == nil:
			case v.Kind == yaml.ScalarNode:
				into[w.Content[i].Value] = v.Tag != "!!null" && !slices.Contains([]string{"", "0", "0.0", "false"}, v.Value)
			default:
				into[w.Content[i].Value] = len(v.Content) > 0
			}
		}
	}
}
