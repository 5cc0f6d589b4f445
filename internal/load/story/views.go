package story

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// ViewKinds are the typed view element kinds, in the order docs list them.
var ViewKinds = []string{"prose", "heading", "banner", "kv", "list", "code", "template", "choice", "media"}

// ViewDoc is a state's typed view: a list of elements, or (the mapping
// form) a base template from views/<extends>.pongo whose blocks are
// replaced by element lists.
type ViewDoc struct {
	Elements []*ViewElement // the list form
	Extends  string         // the mapping form: base view name
	Base     []ViewSegment  // the base template cut at its blocks
	Blocks   map[string][]*ViewElement
	Order    []string // block names as written
	NoBase   bool     // the base view file does not exist: blocks render in Order
}

// ViewSegment is a piece of a base view: literal template text, or a block
// (Block set) whose Default renders when the view does not fill it.
type ViewSegment struct {
	Text    *expr.Text
	Block   string
	Default *expr.Text // nil for a block whose default holds blocks: its pieces follow
	// Within names the blocks the segment sits in (outermost first) when
	// the base nests blocks; a view filling one of them replaces it.
	Within []string
}

// ViewElement is one typed view element. Kind says which fields are set.
type ViewElement struct {
	Kind string
	When *expr.Value // element-level guard (truthy); nil when absent
	Pos  Pos

	Body     *expr.Text // prose, heading, code, template; banner's text
	Subtitle *expr.Text // banner
	Color    string     // banner
	Pairs    []ViewPair // kv
	Items    []*ViewItem
	Marker   string // list: the bullet ("" for "-")
	Choice   *ViewChoice
	Media    *ViewMedia
}

// ViewPair is one kv pair, in author order.
type ViewPair struct {
	Key   string
	Value *expr.Text
}

// ViewItem is a list or choice item.
type ViewItem struct {
	Label  *expr.Text
	Hint   *expr.Text
	When   *expr.Value
	Intent string     // choice single
	Slots  []ViewSlot // choice single: pre-bound slots, in author order
	Param  *ViewParam // choice single
	Value  string     // choice multi (a literal)
}

// ViewSlot is one pre-bound slot of a choice item: a string is a text
// template (as every display string of a view), anything else a literal.
type ViewSlot struct {
	Key   string
	Text  *expr.Text
	Value any
}

// ViewParam is a single-mode item's one-slot capture.
type ViewParam struct {
	Slot, Type, Placeholder string
	Required                bool
	Values                  []string
}

// ViewChoice is a choice element's envelope.
type ViewChoice struct {
	Mode     string // single, multi, form
	Prompt   *expr.Text
	Intent   string // multi, form
	Slot     string // multi
	Min, Max int64  // multi; Max 0 = no bound
	Template string // form: the mad-lib body with {field} blanks
	Fields   []*ViewField
}

// ViewField is one form-mode field, in author order.
type ViewField struct {
	Name        string
	Type        string
	Values      []string
	Hint        string
	Placeholder *expr.Text
	Default     *expr.Text
	Min, Max    *expr.Text
	Required    bool
	Readonly    bool
	Expr        *expr.Value // readonly fields: its value
	When        *expr.Value
}

// ViewMedia is a media element.
type ViewMedia struct {
	Handle  *expr.Text
	Caption *expr.Text // nil: the handle
	Kind    string
	// Path is the artifact's file (path:, a text template) a surface shows
	// in place of the handle; nil when absent.
	Path *expr.Text
	// AnnotateIntent (annotate_intent:) is the intent an annotation of the
	// artifact dispatches, its text in slot AnnotateSlot
	// (annotate_feedback_slot:, default "feedback"); "" when absent.
	AnnotateIntent string
	AnnotateSlot   string
}

var (
	viewMapKeys    = &keySpec{v1: []string{"extends", "blocks", "template_file"}}
	kvKeys         = &keySpec{v1: []string{"pairs"}}
	listKeys       = &keySpec{v1: []string{"items", "marker"}}
	listItemKeys   = &keySpec{v1: []string{"label", "hint", "when"}}
	bannerKeys     = &keySpec{v1: []string{"text", "subtitle", "color"}}
	mediaKeys      = &keySpec{v1: []string{"handle", "caption", "kind", "path", "annotate_intent", "annotate_feedback_slot"}}
	choiceKeys     = &keySpec{v1: []string{"mode", "prompt", "when", "items", "intent", "slot", "min", "max", "template", "fields"}}
	singleItemKeys = &keySpec{v1: []string{"label", "hint", "intent", "slots", "param", "when"}}
	multiItemKeys  = &keySpec{v1: []string{"value", "label", "hint", "when"}}
	paramKeys      = &keySpec{v1: []string{"slot", "type", "placeholder", "required", "values"}}
	fieldKeys      = &keySpec{v1: []string{"type", "values", "hint", "placeholder", "default", "min", "max", "required", "readonly", "expr", "when"}}
	mediaKindNames = []string{"video", "image", "pdf", "html", "slideshow"}
	formBlank      = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	blockTag       = regexp.MustCompile(`\{%-?\s*(block\s+([A-Za-z_][A-Za-z0-9_]*)|endblock(\s+[A-Za-z_][A-Za-z0-9_]*)?)\s*-?%\}`)
)

// loadView reads a state's view: a string (a text template), a list of
// typed elements, or the extends/blocks mapping.
func (l *loader) loadView(f *file, v entry, path string, s *State) {
	mark := len(l.annotateRefs)
	defer func() {
		for i := mark; i < len(l.annotateRefs); i++ {
			l.annotateRefs[i].state = s
		}
	}()
	d := deref(v.val)
	switch {
	case d != nil && d.Kind == yaml.SequenceNode:
		doc := &ViewDoc{}
		doc.Elements = l.loadElements(f, d, path, false)
		s.ViewDoc = doc
	case d != nil && d.Kind == yaml.MappingNode:
		l.loadViewMapping(f, d, path, s)
	default:
		l.compileViewText(f, v.val, path, func(t *expr.Text) { s.View = t })
	}
}

func (l *loader) loadViewMapping(f *file, n *yaml.Node, path string, s *State) {
	if kind := elementKindKey(n); kind != "" {
		l.errAt(f, n, path, "a view mapping takes extends: and blocks:, or template_file:; %s: is a view element, and elements go in a list (did you mean view: [{%s: ...}]?)", kind, kind)
		return
	}
	fs, ok := l.fields(f, n, path, viewMapKeys)
	if !ok {
		return
	}
	if tf, ok := fs.get("template_file"); ok {
		if _, ex := fs.get("extends"); ex {
			l.errAt(f, tf.key, joinPath(path, "template_file"), "template_file: is a whole view on its own; drop extends:/blocks: or template_file:")
			return
		}
		if _, bl := fs.get("blocks"); bl {
			l.errAt(f, tf.key, joinPath(path, "template_file"), "template_file: is a whole view on its own; drop blocks: or template_file:")
			return
		}
		l.loadTemplateFile(f, tf, joinPath(path, "template_file"), func(t *expr.Text) { s.View = t })
		return
	}
	ex, hasEx := fs.get("extends")
	if !hasEx {
		l.errAt(f, n, path, "a view mapping needs extends: (the base view under views/) and blocks:, or template_file: (a whole view under views/); for a list of elements write view: as a sequence")
		return
	}
	name, ok := l.str(f, ex.val, joinPath(path, "extends"))
	if !ok {
		return
	}
	doc := &ViewDoc{Extends: name, Blocks: map[string][]*ViewElement{}, NoBase: true}
	s.ViewDoc = doc
	known := l.loadBaseView(f, ex.val, joinPath(path, "extends"), name, doc)
	if bl, ok := fs.get("blocks"); ok {
		es, _ := l.entries(f, bl.val, joinPath(path, "blocks"))
		for _, be := range es {
			bp := joinPath(joinPath(path, "blocks"), be.name)
			if known != nil && !known[be.name] {
				l.errAt(f, be.key, bp, "block %q is not defined in views/%s.pongo%s", be.name, name, didYouMean(be.name, sortedKeys(known)))
				continue
			}
			bd := deref(be.val)
			if bd == nil || bd.Kind != yaml.SequenceNode {
				l.errAt(f, be.val, bp, "expected a list of view elements, got %s", kindNameOrNull(be.val))
				continue
			}
			doc.Blocks[be.name] = l.loadElements(f, bd, bp, true)
			doc.Order = append(doc.Order, be.name)
		}
	}
}

// loadTemplateFile reads a template_file: view: views/<name> of the
// story (views/<name>.pongo when name has no extension and that is the
// file there), its own file references resolved.
func (l *loader) loadTemplateFile(f *file, e entry, path string, assign func(*expr.Text)) {
	name, ok := l.str(f, e.val, path)
	if !ok {
		return
	}
	if strings.TrimSpace(name) == "" {
		l.errAt(f, e.val, path, "template_file: needs the name of a file under views/")
		return
	}
	sc := l.viewScope(f)
	tf, data, err := l.findTemplate(name, tmplFile{}, sc)
	if err != nil && filepath.Ext(name) == "" {
		tf, data, err = l.findTemplate(name+".pongo", tmplFile{}, sc)
	}
	if err != nil {
		l.errAt(f, e.val, path, "template_file %q: %v", name, err)
		return
	}
	src, msg := l.assemble(string(data), tf, sc, []string{tf.rel})
	if msg != "" {
		l.errAt(f, e.val, path, "%s", msg)
		return
	}
	d := deref(e.val)
	l.addJob(func() (any, *Diagnostic) {
		t, err := expr.CompileText(src)
		if err != nil {
			return nil, &Diagnostic{Pos: l.pos(f, d), Path: path, Message: fmt.Sprintf("invalid template in %s: %v", tf.rel, err)}
		}
		return t, nil
	}, func(v any) {
		t := v.(*expr.Text)
		if t.UsesMenu() {
			l.st.UsesMenu = true
		}
		assign(t)
	})
}

// loadBaseView reads views/<name>.pongo next to the file naming it and cuts
// it at its top-level {% block %} tags; it returns the block names (nil
// when the file could not be read).
func (l *loader) loadBaseView(f *file, n *yaml.Node, path, name string, doc *ViewDoc) map[string]bool {
	raw := "views/" + name + ".pongo"
	if filepath.Ext(name) != "" {
		raw = "views/" + name
	}
	dir, storyDir := filepath.Dir(f.abs), l.dir
	if f.dir != "" {
		storyDir = f.dir // an imported story's own views/
	}
	abs := filepath.Join(dir, filepath.FromSlash(raw))
	if _, err := l.ws.Stat(abs); err != nil && dir != storyDir {
		// a room file under rooms/ names the story's views/
		abs = filepath.Join(storyDir, filepath.FromSlash(raw))
	}
	if _, err := l.ws.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		// No base of its own (an imported room's base is its host's):
		// the blocks render one after another, in the order written.
		l.warnAt(f, n, path, "base view %q not found at %s; the blocks render in the order written", name, raw)
		doc.Base = nil
		return nil
	}
	b, err := l.ws.Read(abs, raw)
	if err != nil {
		l.errAt(f, n, path, "cannot read base view %q: %v; put it at views/%s.pongo in the story directory", name, unwrapPathErr(err), name)
		return nil
	}
	rel := raw
	if r, err := filepath.Rel(l.dir, abs); err == nil {
		rel = filepath.ToSlash(r)
	}
	doc.NoBase = false
	src, ierr := l.expandIncludes(string(b), filepath.Dir(abs), rel, []string{rel})
	if ierr != "" {
		l.errAt(f, n, path, "%s", ierr)
		return nil
	}
	known := map[string]bool{}
	var pieces []basePiece
	at, open, openName, openEnd := 0, false, "", 0
	for _, m := range blockTag.FindAllStringSubmatchIndex(src, -1) {
		tag := src[m[2]:m[3]]
		if strings.HasPrefix(tag, "block") {
			if open {
				// Blocks inside blocks: cut the base as a tree.
				return l.nestedBase(f, n, path, rel, src, doc)
			}
			pieces = append(pieces, basePiece{text: src[at:m[0]], off: at})
			open, openName, openEnd = true, src[m[4]:m[5]], m[1]
			continue
		}
		if !open {
			l.errAt(f, n, path, "%s:%d: {%% endblock %%} without a {%% block %%}", rel, lineAt(src, m[0]))
			return nil
		}
		pieces = append(pieces, basePiece{text: src[openEnd:m[0]], block: openName, isBlock: true, off: openEnd})
		known[openName] = true
		open, at = false, m[1]
	}
	if open {
		l.errAt(f, n, path, "%s: {%% block %s %%} is never closed with {%% endblock %%}", rel, openName)
		return nil
	}
	pieces = append(pieces, basePiece{text: src[at:], off: at})
	l.compileBase(path, rel, src, pieces, doc, l.namesAt(f, n)) // an imported room's base is its own story's
	return known
}

// basePiece is a piece of a base view as cut: text, a block with its
// default (isBlock), or the place of a block whose default holds blocks
// (marker; its text follows as pieces within it).
type basePiece struct {
	text    string
	block   string
	isBlock bool
	marker  bool
	within  []string
	off     int
}

// nestedBase cuts a base view whose blocks hold blocks: a block without
// blocks inside is one segment with its default, as at the top; one with
// blocks inside is a place, followed by the pieces of its default, each
// marked as within it, so filling the outer block replaces all of them and
// filling an inner one only its own.
func (l *loader) nestedBase(f *file, n *yaml.Node, path, rel, src string, doc *ViewDoc) map[string]bool {
	bodies, tree, err := parseBlocks(src)
	if err != nil {
		l.errAt(f, n, path, "%s: %v", rel, err)
		return nil
	}
	known := map[string]bool{}
	for name := range bodies {
		known[name] = true
	}
	var pieces []basePiece
	var flat func(nodes []*tmplNode, within []string)
	flat = func(nodes []*tmplNode, within []string) {
		for _, nd := range nodes {
			off := strings.Index(src, nd.text)
			switch {
			case nd.block == "":
				pieces = append(pieces, basePiece{text: nd.text, within: within, off: max(off, 0)})
			case !slices.ContainsFunc(nd.children, func(c *tmplNode) bool { return c.block != "" }):
				pieces = append(pieces, basePiece{text: bodies[nd.block], block: nd.block, isBlock: true, within: within, off: max(strings.Index(src, nd.open), 0)})
			default:
				pieces = append(pieces, basePiece{block: nd.block, marker: true, within: within})
				flat(nd.children, append(slices.Clone(within), nd.block))
			}
		}
	}
	flat(tree, nil)
	l.compileBase(path, rel, src, pieces, doc, l.namesAt(f, n)) // an imported room's base is its own story's
	return known
}

// compileBase compiles the pieces of a base view into doc.Base.
func (l *loader) compileBase(path, rel, src string, pieces []basePiece, doc *ViewDoc, names *compose.Chain) {
	doc.Base = make([]ViewSegment, len(pieces))
	for i, p := range pieces {
		i, p := i, p
		doc.Base[i].Within = p.within
		if p.isBlock || p.marker {
			doc.Base[i].Block = p.block
		}
		if p.marker {
			continue
		}
		l.addJob(func() (any, *Diagnostic) {
			t, err := l.cache.text(p.text, names)
			if err != nil {
				return nil, &Diagnostic{Pos: Pos{File: rel, Line: lineAt(src, p.off)}, Path: path,
					Message: fmt.Sprintf("invalid template in base view: %v", err)}
			}
			return t, nil
		}, func(v any) {
			if p.isBlock {
				doc.Base[i].Default = v.(*expr.Text)
			} else {
				doc.Base[i].Text = v.(*expr.Text)
			}
		})
	}
}

// includeTag is an {% include "path" %} in a base view (with its trim
// markers); include's with/only forms are not matched and stay refused.
var includeTag = regexp.MustCompile(`\{%(-?)\s*include\s+"([^"]+)"\s*(-?)%\}`)

// maxIncludeDepth bounds nested includes in a base view.
const maxIncludeDepth = 8

// expandIncludes replaces each {% include "path" %} of a base view (read
// from dir; rel names it in messages) with the named file's text, read
// through the workspace relative to the including file, recursively. The
// text is wrapped in an always-true if whose outer tags carry the include
// tag's trim markers, so whitespace trims as the include's would. chain
// lists the files being expanded, to refuse a cycle. It returns a message
// on failure.
func (l *loader) expandIncludes(src, dir, rel string, chain []string) (string, string) {
	var b strings.Builder
	at := 0
	for _, m := range includeTag.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[4]:m[5]]
		line := lineAt(src, m[0])
		if filepath.IsAbs(name) || strings.Contains(filepath.ToSlash(name), "../") || name == ".." {
			return "", fmt.Sprintf("%s:%d: {%% include %q %%}: the path must be relative to %s and stay inside its directory", rel, line, name, filepath.ToSlash(filepath.Dir(rel)))
		}
		abs := filepath.Join(dir, filepath.FromSlash(name))
		irel := filepath.ToSlash(filepath.Join(filepath.Dir(rel), filepath.FromSlash(name)))
		if slices.Contains(chain, irel) {
			return "", fmt.Sprintf("%s:%d: {%% include %q %%} includes itself: %s", rel, line, name, strings.Join(append(slices.Clone(chain), irel), " -> "))
		}
		if len(chain) > maxIncludeDepth {
			return "", fmt.Sprintf("%s:%d: {%% include %q %%}: includes nest deeper than %d", rel, line, name, maxIncludeDepth)
		}
		data, err := l.ws.Read(abs, irel)
		if err != nil {
			return "", fmt.Sprintf("%s:%d: {%% include %q %%}: cannot read %s: %v", rel, line, name, irel, unwrapPathErr(err))
		}
		inner, msg := l.expandIncludes(string(data), filepath.Dir(abs), irel, append(slices.Clone(chain), irel))
		if msg != "" {
			return "", msg
		}
		b.WriteString(src[at:m[0]])
		fmt.Fprintf(&b, "{%%%s if true %%}%s{%% endif %s%%}", src[m[2]:m[3]], inner, src[m[6]:m[7]])
		at = m[1]
	}
	if at == 0 {
		return src, ""
	}
	b.WriteString(src[at:])
	return b.String(), ""
}

func lineAt(src string, off int) int { return 1 + strings.Count(src[:off], "\n") }

// loadElements reads a list of typed view elements.
func (l *loader) loadElements(f *file, n *yaml.Node, path string, inBlock bool) []*ViewElement {
	items, _ := l.list(f, n, path)
	out := make([]*ViewElement, 0, len(items))
	choices := 0
	for i, it := range items {
		ep := indexPath(path, i)
		el := l.loadElement(f, it, ep)
		if el == nil {
			continue
		}
		if el.Kind == "choice" {
			if inBlock {
				l.errAt(f, it, ep, "a choice element cannot sit inside blocks: (a base view renders its blocks as text); write the view as a list of elements to offer a choice, or use a list: element here")
				continue
			}
			if choices++; choices > 1 {
				l.errAt(f, it, ep, "a view has at most one choice element; merge the items into one choice")
				continue
			}
		}
		out = append(out, el)
	}
	return out
}

func (l *loader) loadElement(f *file, n *yaml.Node, path string) *ViewElement {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		l.errAt(f, n, path, "expected a view element (a mapping with one of %s), got %s", strings.Join(ViewKinds, ", "), kindNameOrNull(n))
		return nil
	}
	es, ok := l.entries(f, d, path)
	if !ok {
		return nil
	}
	el := &ViewElement{Pos: l.pos(f, d)}
	var body entry
	for _, e := range es {
		switch {
		case e.name == "when":
			l.compileViewWhen(f, e.val, joinPath(path, "when"), func(g *expr.Value) { el.When = g })
		case containsStr(ViewKinds, e.name):
			if el.Kind != "" {
				l.errAt(f, e.key, joinPath(path, e.name), "a view element has one kind; it already is %q (write %q as its own element)", el.Kind, e.name)
				continue
			}
			el.Kind, body = e.name, e
		default:
			l.errAt(f, e.key, joinPath(path, e.name), "unknown view element kind %q%s", e.name, didYouMean(e.name, append(append([]string{}, ViewKinds...), "when")))
		}
	}
	if el.Kind == "" {
		if len(es) > 0 && es[0].name == "when" {
			l.errAt(f, d, path, "a view element needs a kind (one of %s) next to when:", strings.Join(ViewKinds, ", "))
		}
		return nil
	}
	bp := joinPath(path, el.Kind)
	switch el.Kind {
	case "prose", "heading", "code", "template":
		l.compileViewText(f, body.val, bp, func(t *expr.Text) { el.Body = t })
	case "banner":
		l.loadBanner(f, body.val, bp, el)
	case "kv":
		l.loadKV(f, body.val, bp, el)
	case "list":
		fs, ok := l.bodyFields(f, body.val, bp, listKeys, "list")
		if !ok {
			return nil
		}
		it, ok := fs.get("items")
		if !ok {
			l.errAt(f, body.val, bp, "a list needs items: (a list of labels, or of {label, hint, when})")
			return nil
		}
		el.Items = l.loadItems(f, it.val, joinPath(bp, "items"), listItemKeys, "")
		strField(l, f, fs, bp, "marker", &el.Marker)
	case "choice":
		l.loadChoice(f, body.val, bp, el)
	case "media":
		l.loadMedia(f, body.val, bp, el)
	}
	return el
}

// bodyFields is fields for the body of a view element of kind: a when:
// written inside the body (a sibling of items:, pairs:, text:) instead of
// beside the kind is an error, as in Kitsoki, since it would guard
// nothing.
func (l *loader) bodyFields(f *file, n *yaml.Node, path string, spec *keySpec, kind string) (fieldSet, bool) {
	if w := mapEntry(n, "when"); w != nil {
		l.errAt(f, w, joinPath(path, "when"), "when: must sit beside %s: (at the element's level), not inside its body, where it would guard nothing; dedent it to line up with %s:", kind, kind)
		d := deref(n)
		c := *d
		c.Content = nil
		for i := 0; i+1 < len(d.Content); i += 2 {
			if d.Content[i] != w {
				c.Content = append(c.Content, d.Content[i], d.Content[i+1])
			}
		}
		n = &c
	}
	return l.fields(f, n, path, spec)
}

// elementKindKey is the first key of mapping n that names a view element
// kind, when n has no key of a view mapping; "" otherwise.
func elementKindKey(n *yaml.Node) string {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		return ""
	}
	kind := ""
	for i := 0; i+1 < len(d.Content); i += 2 {
		k := d.Content[i].Value
		if slices.Contains(viewMapKeys.v1, k) {
			return ""
		}
		if kind == "" && slices.Contains(ViewKinds, k) {
			kind = k
		}
	}
	return kind
}

// mapEntry is the key node of key k in mapping n (nil when absent).
func mapEntry(n *yaml.Node, k string) *yaml.Node {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		if d.Content[i].Value == k {
			return d.Content[i]
		}
	}
	return nil
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (l *loader) loadBanner(f *file, n *yaml.Node, path string, el *ViewElement) {
	if d := deref(n); d != nil && d.Kind == yaml.ScalarNode {
		l.compileText(f, n, path, func(t *expr.Text) { el.Body = t })
		return
	}
	fs, ok := l.bodyFields(f, n, path, bannerKeys, "banner")
	if !ok {
		return
	}
	t, ok := fs.get("text")
	if !ok {
		l.errAt(f, n, path, "a banner needs text:")
		return
	}
	l.compileText(f, t.val, joinPath(path, "text"), func(x *expr.Text) { el.Body = x })
	if st, ok := fs.get("subtitle"); ok {
		l.compileText(f, st.val, joinPath(path, "subtitle"), func(x *expr.Text) { el.Subtitle = x })
	}
	strField(l, f, fs, path, "color", &el.Color)
}

func (l *loader) loadKV(f *file, n *yaml.Node, path string, el *ViewElement) {
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode && len(d.Content) > 0 && mapEntry(d, "pairs") == nil && mapEntry(d, "when") == nil {
		l.errAt(f, n, path, "a kv element takes pairs: (a mapping of label: value), e.g. kv: {pairs: {Loans: \"{{ world.loans }}\"}} (did you mean kv: {pairs: {%s: ...}}?)", d.Content[0].Value)
		return
	}
	fs, ok := l.bodyFields(f, n, path, kvKeys, "kv")
	if !ok {
		return
	}
	p, ok := fs.get("pairs")
	if !ok {
		l.errAt(f, n, path, "a kv element needs pairs: (a mapping of label: value)")
		return
	}
	es, _ := l.entries(f, p.val, joinPath(path, "pairs"))
	el.Pairs = make([]ViewPair, len(es))
	for i, e := range es {
		el.Pairs[i].Key = e.name
		pv := &el.Pairs[i]
		if d := deref(e.val); d != nil && d.Kind == yaml.ScalarNode && d.Tag != "!!str" && !isNull(d) {
			// numbers and booleans are shown as written
			l.compileText(f, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.Value, Line: d.Line, Column: d.Column}, joinPath(joinPath(path, "pairs"), e.name), func(t *expr.Text) { pv.Value = t })
			continue
		}
		l.compileText(f, e.val, joinPath(joinPath(path, "pairs"), e.name), func(t *expr.Text) { pv.Value = t })
	}
}

func (l *loader) loadMedia(f *file, n *yaml.Node, path string, el *ViewElement) {
	fs, ok := l.fields(f, n, path, mediaKeys)
	if !ok {
		return
	}
	m := &ViewMedia{}
	el.Media = m
	h, ok := fs.get("handle")
	if !ok {
		l.errAt(f, n, path, "a media element needs handle: (the artifact handle bound from host.artifacts_dir)")
		return
	}
	l.compileText(f, h.val, joinPath(path, "handle"), func(t *expr.Text) { m.Handle = t })
	if c, ok := fs.get("caption"); ok {
		l.compileText(f, c.val, joinPath(path, "caption"), func(t *expr.Text) { m.Caption = t })
	}
	if k, ok := fs.get("kind"); ok {
		if s, ok := l.str(f, k.val, joinPath(path, "kind")); ok {
			if !containsStr(mediaKindNames, s) {
				l.errAt(f, k.val, joinPath(path, "kind"), "unknown media kind %q (one of %s)%s", s, strings.Join(mediaKindNames, ", "), didYouMean(s, mediaKindNames))
			}
			m.Kind = s
		}
	}
	if p, ok := fs.get("path"); ok {
		l.compileText(f, p.val, joinPath(path, "path"), func(t *expr.Text) { m.Path = t })
	}
	strField(l, f, fs, path, "annotate_intent", &m.AnnotateIntent)
	strField(l, f, fs, path, "annotate_feedback_slot", &m.AnnotateSlot)
	if sl, ok := fs.get("annotate_feedback_slot"); ok && m.AnnotateIntent == "" {
		l.errAt(f, sl.key, joinPath(path, "annotate_feedback_slot"), "annotate_feedback_slot: names the slot of annotate_intent:, which the element does not set")
	}
	if m.AnnotateIntent != "" {
		if m.AnnotateSlot == "" {
			m.AnnotateSlot = "feedback"
		}
		in := fs.at("annotate_intent")
		l.annotateRefs = append(l.annotateRefs, annotateRef{f: f, n: in.val, path: joinPath(path, "annotate_intent"), media: m})
	}
}

// loadItems reads list or choice items; mode is "" for a list element.
func (l *loader) loadItems(f *file, n *yaml.Node, path string, spec *keySpec, mode string) []*ViewItem {
	nodes, _ := l.list(f, n, path)
	out := make([]*ViewItem, 0, len(nodes))
	for i, nd := range nodes {
		ip := indexPath(path, i)
		if d := deref(nd); mode == "" && d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
			// A list item may be its label alone.
			if strings.TrimSpace(d.Value) == "" {
				l.errAt(f, nd, ip, "a list item is its label or {label, hint, when}, got an empty string")
				continue
			}
			it := &ViewItem{}
			l.compileViewText(f, textNode(d), ip, func(t *expr.Text) { it.Label = t })
			out = append(out, it)
			continue
		}
		fs, ok := l.fields(f, nd, ip, spec)
		if !ok {
			continue
		}
		it := &ViewItem{}
		if w, ok := fs.get("when"); ok {
			l.compileViewWhen(f, w.val, joinPath(ip, "when"), func(g *expr.Value) { it.When = g })
		}
		if h, ok := fs.get("hint"); ok {
			l.compileText(f, h.val, joinPath(ip, "hint"), func(t *expr.Text) { it.Hint = t })
		}
		lb, hasLabel := fs.get("label")
		if hasLabel {
			l.compileText(f, lb.val, joinPath(ip, "label"), func(t *expr.Text) { it.Label = t })
		}
		switch mode {
		case "multi":
			v, ok := fs.get("value")
			if !ok {
				l.errAt(f, nd, ip, "a multi-mode item needs value:")
				continue
			}
			if s, ok := l.str(f, v.val, joinPath(ip, "value")); ok {
				if strings.Contains(s, "{{") || strings.Contains(s, "{%") {
					l.errAt(f, v.val, joinPath(ip, "value"), "a multi-mode value must be a literal, not a template")
				}
				it.Value = s
				if !hasLabel {
					l.compileText(f, v.val, joinPath(ip, "value"), func(t *expr.Text) { it.Label = t })
				}
			}
		case "single":
			if !hasLabel {
				l.errAt(f, nd, ip, "a choice item needs label:")
			}
			if in, ok := fs.get("intent"); ok {
				if s, ok := l.str(f, in.val, joinPath(ip, "intent")); ok {
					it.Intent = s
				}
			} else {
				l.errAt(f, nd, ip, "a choice item needs intent: (the intent it dispatches)")
			}
			if sl, ok := fs.get("slots"); ok {
				it.Slots = l.loadItemSlots(f, sl.val, joinPath(ip, "slots"))
			}
			if pa, ok := fs.get("param"); ok {
				it.Param = l.loadParam(f, pa.val, joinPath(ip, "param"))
			}
		default:
			if !hasLabel {
				l.errAt(f, nd, ip, "a list item needs label:")
			}
		}
		out = append(out, it)
	}
	if len(out) == 0 && len(nodes) == 0 {
		l.errAt(f, n, path, "items: needs at least one item")
	}
	return out
}

var paramTypes = []string{"string", "int", "enum"}

func (l *loader) loadParam(f *file, n *yaml.Node, path string) *ViewParam {
	fs, ok := l.fields(f, n, path, paramKeys)
	if !ok {
		return nil
	}
	p := &ViewParam{}
	if _, ok := fs.get("slot"); !ok {
		l.errAt(f, n, path, "param needs slot: (the slot it captures)")
	}
	strField(l, f, fs, path, "slot", &p.Slot)
	strField(l, f, fs, path, "placeholder", &p.Placeholder)
	boolField(l, f, fs, path, "required", &p.Required)
	if t, ok := fs.get("type"); ok {
		if s, ok := l.str(f, t.val, joinPath(path, "type")); ok {
			if !containsStr(paramTypes, s) {
				l.errAt(f, t.val, joinPath(path, "type"), "unknown param type %q (one of %s)%s", s, strings.Join(paramTypes, ", "), didYouMean(s, paramTypes))
			}
			p.Type = s
		}
	} else {
		l.errAt(f, n, path, "param needs type: (string, int or enum)")
	}
	if v, ok := fs.get("values"); ok {
		p.Values, _ = l.strList(f, v.val, joinPath(path, "values"))
	} else if p.Type == "enum" {
		l.errAt(f, n, path, "an enum param needs values:")
	}
	return p
}

var choiceModes = []string{"single", "multi", "form"}
var fieldTypes = []string{"string", "int", "float", "bool", "enum"}

func (l *loader) loadChoice(f *file, n *yaml.Node, path string, el *ViewElement) {
	fs, ok := l.fields(f, n, path, choiceKeys)
	if !ok {
		return
	}
	c := &ViewChoice{Mode: "single"}
	el.Choice = c
	if m, ok := fs.get("mode"); ok {
		if s, ok := l.str(f, m.val, joinPath(path, "mode")); ok {
			if !containsStr(choiceModes, s) {
				l.errAt(f, m.val, joinPath(path, "mode"), "unknown choice mode %q (one of %s)%s", s, strings.Join(choiceModes, ", "), didYouMean(s, choiceModes))
				return
			}
			c.Mode = s
		}
	}
	if w, ok := fs.get("when"); ok {
		l.compileViewWhen(f, w.val, joinPath(path, "when"), func(g *expr.Value) { el.When = g })
	}
	if p, ok := fs.get("prompt"); ok {
		l.compileText(f, p.val, joinPath(path, "prompt"), func(t *expr.Text) { c.Prompt = t })
	}
	allowed := map[string][]string{
		"single": {"mode", "prompt", "when", "items"},
		"multi":  {"mode", "prompt", "when", "items", "intent", "slot", "min", "max"},
		"form":   {"mode", "prompt", "when", "intent", "template", "fields"},
	}[c.Mode]
	for _, e := range fs {
		if !containsStr(allowed, e.name) {
			l.errAt(f, e.key, joinPath(path, e.name), "%q does not apply to a %s-mode choice (it takes %s)", e.name, c.Mode, strings.Join(allowed, ", "))
		}
	}
	need := func(key, what string) (entry, bool) {
		e, ok := fs.get(key)
		if !ok {
			l.errAt(f, n, path, "a %s-mode choice needs %s: (%s)", c.Mode, key, what)
		}
		return e, ok
	}
	if c.Mode != "single" {
		if e, ok := need("intent", "the intent it dispatches"); ok {
			if s, ok := l.str(f, e.val, joinPath(path, "intent")); ok {
				c.Intent = s
			}
		}
	}
	switch c.Mode {
	case "single", "multi":
		if e, ok := need("items", "at least one item"); ok {
			spec := singleItemKeys
			if c.Mode == "multi" {
				spec = multiItemKeys
			}
			el.Items = l.loadItems(f, e.val, joinPath(path, "items"), spec, c.Mode)
		}
		if c.Mode == "multi" {
			if _, ok := need("slot", "the list slot that receives the picked values"); ok {
				strField(l, f, fs, path, "slot", &c.Slot)
			}
			for _, k := range []string{"min", "max"} {
				if e, ok := fs.get(k); ok {
					if v, ok := l.integer(f, e.val, joinPath(path, k)); ok {
						if k == "min" {
							c.Min = v
						} else {
							c.Max = v
						}
					}
				}
			}
		}
	case "form":
		l.loadFormChoice(f, fs, path, c, need)
	}
}

// loadFormChoice reads what a form-mode choice needs: its template, the
// mad-lib text with {field} blanks, and one fields: entry per blank. A
// blank without an entry is an error at the template.
func (l *loader) loadFormChoice(f *file, fs fieldSet, path string, c *ViewChoice, need func(key, what string) (entry, bool)) {
	if e, ok := need("template", "the mad-lib text with {field} blanks"); ok {
		if s, ok := l.str(f, e.val, joinPath(path, "template")); ok {
			c.Template = s
		}
	}
	if e, ok := need("fields", "one entry per {field} blank"); ok {
		l.loadFields(f, e.val, joinPath(path, "fields"), c)
	}
	names := map[string]bool{}
	for _, fd := range c.Fields {
		names[fd.Name] = true
	}
	if e, ok := fs.get("template"); ok && len(c.Fields) > 0 {
		for _, m := range formBlank.FindAllStringSubmatch(c.Template, -1) {
			if !names[m[1]] {
				l.errAt(f, e.val, joinPath(path, "template"), "blank {%s} has no fields: entry%s", m[1], didYouMean(m[1], sortedKeys(names)))
			}
		}
	}
}

func (l *loader) loadFields(f *file, n *yaml.Node, path string, c *ViewChoice) {
	es, _ := l.entries(f, n, path)
	if len(es) == 0 {
		l.errAt(f, n, path, "fields: needs at least one field")
	}
	for _, e := range es {
		fp := joinPath(path, e.name)
		fs, ok := l.fields(f, e.val, fp, fieldKeys)
		if !ok {
			continue
		}
		fd := &ViewField{Name: e.name}
		c.Fields = append(c.Fields, fd)
		if t, ok := fs.get("type"); ok {
			if s, ok := l.str(f, t.val, joinPath(fp, "type")); ok {
				if !containsStr(fieldTypes, s) {
					l.errAt(f, t.val, joinPath(fp, "type"), "unknown field type %q (one of %s)%s", s, strings.Join(fieldTypes, ", "), didYouMean(s, fieldTypes))
				}
				fd.Type = s
			}
		} else {
			l.errAt(f, e.val, fp, "a form field needs type: (%s)", strings.Join(fieldTypes, ", "))
		}
		if v, ok := fs.get("values"); ok {
			fd.Values, _ = l.strList(f, v.val, joinPath(fp, "values"))
		} else if fd.Type == "enum" {
			l.errAt(f, e.val, fp, "an enum field needs values:")
		}
		strField(l, f, fs, fp, "hint", &fd.Hint)
		boolField(l, f, fs, fp, "required", &fd.Required)
		boolField(l, f, fs, fp, "readonly", &fd.Readonly)
		for _, k := range []struct {
			key string
			dst **expr.Text
		}{{"placeholder", &fd.Placeholder}, {"default", &fd.Default}, {"min", &fd.Min}, {"max", &fd.Max}} {
			if v, ok := fs.get(k.key); ok {
				dst := k.dst
				node := v.val
				if d := deref(node); d != nil && d.Kind == yaml.ScalarNode && d.Tag != "!!str" {
					node = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.Value, Line: d.Line, Column: d.Column}
				}
				l.compileText(f, node, joinPath(fp, k.key), func(t *expr.Text) { *dst = t })
			}
		}
		if w, ok := fs.get("when"); ok {
			l.compileViewWhen(f, w.val, joinPath(fp, "when"), func(g *expr.Value) { fd.When = g })
		}
		if x, ok := fs.get("expr"); ok {
			if s, ok := l.str(f, x.val, joinPath(fp, "expr")); ok {
				l.compileValue(f, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "{{ " + s + " }}", Line: x.val.Line, Column: x.val.Column}, joinPath(fp, "expr"), func(v *expr.Value) { fd.Expr = v })
			}
		} else if fd.Readonly {
			l.errAt(f, e.val, fp, "a readonly field needs expr: (its value, an expression over world and slots)")
		}
	}
}

// textNode is scalar d as a string (a number or boolean shows as written).
func textNode(d *yaml.Node) *yaml.Node {
	if d.Tag == "!!str" {
		return d
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.Value, Line: d.Line, Column: d.Column, Style: d.Style}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// compileViewWhen compiles a view when: as an expression whose value is
// taken as truthy (a non-empty list shows the element), as Kitsoki's
// stories rely on.
func (l *loader) compileViewWhen(f *file, n *yaml.Node, path string, assign func(*expr.Value)) {
	src, ok := l.str(f, n, path)
	if !ok {
		return
	}
	d := deref(n)
	l.compileValueIn(f, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "{{ " + strings.TrimSpace(src) + " }}", Line: d.Line, Column: d.Column}, path, true, assign)
}

func (l *loader) loadItemSlots(f *file, n *yaml.Node, path string) []ViewSlot {
	es, _ := l.entries(f, n, path)
	out := make([]ViewSlot, len(es))
	for i, e := range es {
		out[i].Key = e.name
		sp := &out[i]
		if d := deref(e.val); d != nil && d.Kind == yaml.ScalarNode && d.Tag == "!!str" {
			l.compileText(f, e.val, joinPath(path, e.name), func(t *expr.Text) { sp.Text = t })
			continue
		}
		if v, ok := l.value(f, e.val, joinPath(path, e.name)); ok {
			sp.Value = v
		}
	}
	return out
}
