package story

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// foldUnit folds the child's documents under the alias: the importer's
// bindings, overrides and exit mappings applied, names renamed
// (compose.Import.Fold), plus the wrapper state. The names it adds are
// recorded in the scope's unit.
func (l *loader) foldUnit(sc *importScope, d *importDef, child *unit) []*unitFile {
	entryState, ok := l.importEntry(sc.f, d, child)
	if !ok {
		return nil
	}
	im := l.newImport(sc, d, child)
	bindings := l.importBindings(sc.f, d, child)
	if d.hostsMode == "declared" {
		l.hostChecks = append(l.hostChecks, hostCheck{f: sc.f, n: d.hostsModeKey, path: joinPath(d.path, "hosts"), alias: d.alias, hosts: child.hosts, u: sc.u})
	}
	files, without := l.overrideFiles(sc.f, d, child)
	for i, uf := range files {
		st := foldStep{im: im, bindings: bindings}
		if i < len(child.files) {
			st.without = without // not the document of the overrides
		}
		uf.steps = append(uf.steps, st)
	}
	for _, ch := range child.chains {
		ch.Add(im)
	}
	files = append(files, l.wrapperFile(sc, d, child))
	l.recordFold(sc, d, child, im, entryState)
	return files
}

// importEntry is the child state a transition into the import enters.
func (l *loader) importEntry(f *file, d *importDef, child *unit) (string, bool) {
	entryState := d.entry
	if entryState == "" {
		entryState = child.root
	}
	if entryState == "" {
		l.errAt(f, d.key, d.path, "entry: is required (the state of the imported story a transition into %s enters)", d.alias)
		return "", false
	}
	if !child.states[firstSeg(entryState)] {
		l.errAt(f, d.entryNode, joinPath(d.path, "entry"), "the imported story %s has no state %q%s", l.relPath(child.abs), entryState, didYouMean(entryState, sortedKeys(child.states)))
		return "", false
	}
	return entryState, true
}

// newImport is the fold of d: the child's names and what the importer asks
// of them (intents.export and intents.import, exits, overrides.prompts).
func (l *loader) newImport(sc *importScope, d *importDef, child *unit) *compose.Import {
	f := sc.f
	im := &compose.Import{
		Alias: d.alias, States: child.states, World: child.world, Intents: child.intents, Ifaces: child.ifaces,
		Exits: map[string]bool{}, Bare: map[string]bool{}, Lifted: map[string]bool{}, ExitTo: map[string]compose.Exit{},
		Prompts: l.importPrompts(sc, d, child),
	}
	for name := range child.exits {
		im.Exits[name] = true
	}
	im.Requires, im.NonZero = child.requires, child.nonZero
	for _, x := range d.export {
		im.Bare[x.name] = true
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
		im.Lifted[x.name] = true
	}
	for _, x := range d.exitOrder {
		if _, ok := child.exits[x.name]; !ok {
			l.errAt(f, x.key, joinPath(joinPath(d.path, "exits"), x.name), "the imported story declares no exit %q%s", x.name, didYouMean(x.name, child.exitList))
		}
		if ix, ok := d.exits[x.name]; ok {
			im.ExitTo[x.name] = compose.Exit{To: ix.to, Set: ix.set}
		}
	}
	deferred := l.checkImportExits(sc, d)
	im.ExitTarget = func(n *yaml.Node, exit string) {
		if ref, ok := deferred[exit]; ok {
			l.exitDeferred[n] = ref // resolved once every import is folded
			return
		}
		l.exitTargets[n] = true // a bad to: is reported there, once
	}
	written := sc.chain()
	im.Appended = func(set *yaml.Node) { l.writtenIn(set, written) }
	return im
}

// writtenIn records that the values of set (an exit's set: appended to an
// imported arm) are compiled with chain, the names they were written in.
func (l *loader) writtenIn(set *yaml.Node, chain *compose.Chain) {
	if l.foreign == nil {
		l.foreign = map[*yaml.Node]*compose.Chain{}
	}
	for i := 1; i < len(set.Content); i += 2 {
		l.foreign[set.Content[i]] = chain
		if d := deref(set.Content[i]); d != nil {
			l.foreign[d] = chain
		}
	}
}

// namesAt is the chain the template or expression at node n of file f is
// compiled with: nil in the story's own files.
func (l *loader) namesAt(f *file, n *yaml.Node) *compose.Chain {
	chain := f.chain
	if c, ok := l.foreign[n]; ok {
		chain = c
	} else if c, ok := l.foreign[deref(n)]; ok {
		chain = c
	}
	if chain.Empty() {
		return nil
	}
	return chain
}

// withNames is the compile option of a chain.
func withNames(c *compose.Chain) expr.CompileOption {
	if c.Empty() {
		return expr.WithNames(nil)
	}
	return expr.WithNames(c)
}

// importPrompts reads overrides.prompts: each prompt file of the child the
// importer swaps for one of its own, relative to the child's directory.
func (l *loader) importPrompts(sc *importScope, d *importDef, child *unit) map[string]string {
	prompts := map[string]string{}
	for _, p := range d.overPrompts {
		pp := joinPath(joinPath(d.path, "overrides.prompts"), p.name)
		s, ok := l.str(sc.f, p.val, pp)
		if !ok || s == "" {
			continue
		}
		to := filepath.Join(sc.dir, filepath.FromSlash(s))
		if _, err := l.ws.Stat(to); err != nil {
			l.errAt(sc.f, p.val, pp, "cannot read prompt file %q: %v", s, unwrapPathErr(err))
			continue
		}
		rel, err := filepath.Rel(child.dir, to)
		if err != nil {
			rel = to
		}
		prompts[p.name] = filepath.ToSlash(rel)
	}
	return prompts
}

// importBindings reads host_bindings: the child's interfaces the importer
// binds to its handlers.
func (l *loader) importBindings(f *file, d *importDef, child *unit) map[string]*yaml.Node {
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
	return bindings
}

// checkImportExits checks each exits.<name>.to against the importer's
// states: now for an imported importer, once loaded for the root story.
// An imported importer's to: may name a state of a story importing it
// (A imports B imports C, and B sends C's exit to A's state): such a to:
// is returned, by exit, to be resolved once the whole story is folded.
func (l *loader) checkImportExits(sc *importScope, d *importDef) map[string]*deferredExit {
	deferred := map[string]*deferredExit{}
	for _, x := range d.exitOrder {
		ix, ok := d.exits[x.name]
		if !ok || ix.toN == nil {
			continue
		}
		ref := nodeRef{f: sc.f, n: ix.toN, path: joinPath(joinPath(joinPath(d.path, "exits"), x.name), "to"), value: ix.to}
		switch v := ix.to; {
		case sc.u == nil:
			l.exitToChecks = append(l.exitToChecks, ref)
		case v != "" && v != "." && !strings.HasPrefix(v, "@exit:") && !isTemplated(v) && !sc.u.states[firstSeg(normStateName(v))]:
			deferred[x.name] = &deferredExit{ref: ref}
		default:
			l.checkExitTo(ref, sc.u.states, sc.u.exits)
		}
	}
	return deferred
}

// deferredExit is an imported importer's exits.<name>.to naming no state
// of its own: the targets it wrote resolve in the whole story, and the
// first that does not is reported at the to:.
type deferredExit struct {
	ref      nodeRef
	reported bool
}

// foldStep is one import's fold of a document: the states and intents the
// importer overrides taken out, its bindings set, its names renamed.
type foldStep struct {
	im       *compose.Import
	bindings map[string]*yaml.Node
	without  map[string]map[string]bool // section → overridden names
}

// foldedDoc is the document of an imported file folded by each import it
// went through.
func (l *loader) foldedDoc(uf *unitFile) *yaml.Node {
	doc := uf.doc
	if doc == nil {
		doc = l.unitDoc(uf)
	}
	for _, st := range uf.steps {
		for _, section := range []string{"states", "intents"} {
			if names := st.without[section]; len(names) > 0 {
				doc = compose.Without(doc, section, names)
			}
		}
		doc = compose.Bind(doc, st.bindings)
		st.im.Report = func(n *yaml.Node, msg string) { l.errAt(uf.f, n, "", "%s", msg) }
		doc = st.im.Fold(doc)
	}
	return doc
}

// overrideFiles returns the child's files plus a document of the states
// and intents the importer overrides (read from the importer's file, in
// the child's names), and the names to take out of the child's files.
func (l *loader) overrideFiles(f *file, d *importDef, child *unit) ([]*unitFile, map[string]map[string]bool) {
	var overDoc *yaml.Node
	files := slices.Clone(child.files)
	without := map[string]map[string]bool{}
	replace := func(section string, over []entry, have map[string]bool, kind string) {
		names := map[string]bool{}
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
			names[name] = true
			m.Content = append(m.Content, o.key, compose.Copy(o.val)) // the fold renames it in place
			if section == "states" {
				// intents the overriding room declares are the imported
				// story's, renamed with it
				collectStateIntents(o.val, child.intents)
			}
		}
		if len(names) == 0 {
			return
		}
		without[section] = names
		if overDoc == nil {
			overDoc = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		overDoc.Content = append(overDoc.Content, scalar(section), m)
	}
	replace("states", d.overStates, child.states, "state")
	replace("intents", d.overIntents, child.intents, "intent")
	if overDoc != nil {
		files = append(files, &unitFile{f: f, doc: overDoc, dir: child.dir, chain: child.chain})
	}
	return files, without
}

// wrapperFile is the document of the import's wrapper state, in the
// importer's names: a state <alias> whose on_enter sets world_in.
func (l *loader) wrapperFile(sc *importScope, d *importDef, child *unit) *unitFile {
	wrapper := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addPair(wrapper, "description", scalar("import "+d.alias+" ("+l.relPath(child.abs)+")"))
	if len(d.worldIn) > 0 {
		set := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, w := range d.worldIn {
			if !child.world[w.name] {
				l.errAt(sc.f, w.key, joinPath(joinPath(d.path, "world_in"), w.name), "the imported story declares no world key %q%s", w.name, didYouMean(w.name, sortedKeys(child.world)))
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
	return &unitFile{f: sc.f, doc: wdoc, dir: sc.dir, wrapper: d.alias, key: d.key, path: d.path, chain: sc.chain()}
}

// recordFold records the names the import adds in the importer's unit (a
// nested import) or the loader (the root story): the wrapper states (its
// own and its child's, renamed), world keys, intents, interfaces, hosts.
func (l *loader) recordFold(sc *importScope, d *importDef, child *unit, im *compose.Import, entryState string) {
	w := &importWrap{alias: d.alias, source: l.relPath(child.abs), version: d.version, entry: d.alias + "." + entryState, intents: map[string]string{}}
	if fb := child.fallback; fb != nil {
		w.fallback = &FreeFormFallback{State: d.alias + "." + normStateName(fb.State), Intent: im.IntentName(fb.Intent), Pos: fb.Pos}
	}
	for name := range child.intents {
		if nn := im.IntentName(name); nn != name {
			w.intents[name] = nn
		}
	}
	for _, k := range sortedKeys(child.world) {
		w.world = append(w.world, im.Key(k))
	}
	wraps := map[string]*importWrap{d.alias: w}
	for name, cw := range child.wrappers {
		nw := &importWrap{alias: cw.alias, source: cw.source, version: cw.version, entry: d.alias + "." + cw.entry, intents: map[string]string{}}
		for k, v := range cw.intents {
			nw.intents[k] = im.IntentName(v)
		}
		for _, k := range cw.world {
			nw.world = append(nw.world, im.Key(k))
		}
		if fb := cw.fallback; fb != nil {
			nw.fallback = &FreeFormFallback{State: d.alias + "." + fb.State, Intent: im.IntentName(fb.Intent), Pos: fb.Pos}
		}
		wraps[d.alias+"."+name] = nw
	}
	if sc.u == nil {
		for k, v := range wraps {
			l.wrappers[k] = v
		}
		for _, x := range d.export {
			l.exportChecks = append(l.exportChecks, nodeRef{f: sc.f, n: x.key, path: joinPath(d.path, "intents.export"), value: x.name})
		}
		return
	}
	u := sc.u
	u.states[d.alias] = true
	for k := range child.world {
		u.world[im.Key(k)] = true
	}
	for k := range child.intents {
		u.intents[im.IntentName(k)] = true
	}
	for k := range im.Lifted {
		u.intents[k] = true
	}
	for k := range child.ifaces {
		u.ifaces[im.Key(k)] = true
	}
	for _, h := range child.hosts {
		if !slices.Contains(u.hosts, h) {
			u.hosts = append(u.hosts, h)
		}
	}
	for k, v := range wraps {
		u.wrappers[k] = v
	}
	u.chains = append(u.chains, child.chains...)
	for _, x := range d.export {
		if !u.intents[x.name] {
			l.errAt(sc.f, x.key, joinPath(d.path, "intents.export"), "cannot export intent %q: this story declares no such intent%s", x.name, didYouMean(x.name, sortedKeys(u.intents)))
		}
	}
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

// rewritePaths makes the relative file paths of an imported document
// (prompt files, schemas, scripts, system prompt files, cassettes), in
// place, relative to the root story's directory, so they name the imported
// story's files.
func (l *loader) rewritePaths(n *yaml.Node, dir string) {
	if dir == l.dir {
		return
	}
	var seen map[*yaml.Node]bool // anchored nodes, which aliases reach again
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		d := deref(n)
		if d == nil || d.Kind == yaml.ScalarNode {
			return
		}
		if d.Anchor != "" {
			if seen[d] {
				return
			}
			if seen == nil {
				seen = map[*yaml.Node]bool{}
			}
			seen[d] = true
		}
		for i, c := range d.Content {
			walk(c)
			if d.Kind == yaml.MappingNode && i%2 == 1 {
				l.rewritePath(d.Content[i-1].Value, deref(c), dir)
			}
		}
	}
	walk(n)
}

// rewritePath rewrites the file path of scalar s, the value of key k.
func (l *loader) rewritePath(k string, s *yaml.Node, dir string) {
	if s == nil || s.Kind != yaml.ScalarNode || !slices.Contains(pathKeys, k) || s.Value == "" || isTemplated(s.Value) || filepath.IsAbs(filepath.FromSlash(s.Value)) || strings.Contains(s.Value, "\n") {
		return
	}
	p := filepath.Join(dir, filepath.FromSlash(s.Value))
	if k == "prompt" {
		// with.prompt is a file only when one is there.
		if st, err := l.ws.Stat(p); err != nil || !st.Mode().IsRegular() {
			return
		}
	}
	if rel, err := filepath.Rel(l.dir, p); err == nil {
		s.Value = filepath.ToSlash(rel)
	}
}

// pathKeys are the keys whose values are files relative to the story
// directory.
var pathKeys = []string{"prompt", "prompt_path", "schema", "script", "system_prompt_path", "cassette", "manifest"}

func firstSeg(p string) string { return compose.FirstSeg(p) }

func scalar(s string) *yaml.Node { return compose.Scalar(s) }

func addPair(m *yaml.Node, k string, v *yaml.Node) {
	m.Content = append(m.Content, scalar(k), v)
}
