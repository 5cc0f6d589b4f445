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
	"go.yaml.in/yaml/v3"
)

// Text templates may pull in other template files, as Kitsoki's renderer
// lets them: {% include "f" %}, {% extends "f" %} with {% block %}
// overrides and {{ block.Super }}, and {% import "f" macro, … %}. A story's
// templates never read files when they run, so the loader resolves these
// tags when it compiles the template: the files are read through the
// workspace and spliced in, and the template compiled is one text with no
// file references left. A view's references resolve under the story's
// views/ directory (an imported story's own), a prompt's along the prompt
// search path (prompts.overlay, then the story; @story/, @shared/ and
// @import/<alias>/ name the roots outright).

// tmplKind says which search path a template's file references use.
type tmplKind int

const (
	viewTemplate tmplKind = iota
	promptTemplate
)

// tmplScope is where a template's file references resolve.
type tmplScope struct {
	kind     tmplKind
	storyDir string // the story the template belongs to (an imported story's own)
}

// maxAssembleDepth bounds nested includes, extends and imports.
const maxAssembleDepth = 16

var (
	// fileTag is an include, extends or import tag.
	fileTag = regexp.MustCompile(`\{%(-?)\s*(include|extends|import)\s+((?:"[^"]*"|'[^']*'|[^%])*?)\s*(-?)%\}`)
	// blockOpen and blockClose are the block tags of a template.
	anyBlockTag = regexp.MustCompile(`\{%-?\s*(block\s+([A-Za-z_][A-Za-z0-9_]*)|endblock(?:\s+[A-Za-z_][A-Za-z0-9_]*)?)\s*-?%\}`)
	blockSuper  = regexp.MustCompile(`\{\{-?\s*block\.Super\s*-?\}\}`)
	macroDef    = regexp.MustCompile(`(?s)\{%-?\s*macro\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(.*?\{%-?\s*endmacro\s*-?%\}`)
	quotedName  = regexp.MustCompile(`^(?:"([^"]*)"|'([^']*)')`)
)

// needsAssembly reports whether src has a file reference to resolve.
func needsAssembly(src string) bool {
	return strings.Contains(src, "{%") && (strings.Contains(src, "include") || strings.Contains(src, "extends") || strings.Contains(src, "import"))
}

// tmplFile is a template file read for assembly: its text, where it is
// (abs) and how messages name it (rel).
type tmplFile struct{ abs, rel string }

// assemble resolves the file references of src, a template read from
// from (zero for text written in a story file). It returns the text to
// compile, or a message saying which reference failed and why.
func (l *loader) assemble(src string, from tmplFile, sc tmplScope, chain []string) (string, string) {
	if !needsAssembly(src) {
		return src, ""
	}
	if len(chain) > maxAssembleDepth {
		return "", fmt.Sprintf("template files nest deeper than %d: %s", maxAssembleDepth, strings.Join(chain, " -> "))
	}
	if m := fileTag.FindStringSubmatchIndex(src); m != nil && src[m[4]:m[5]] == "extends" {
		if pre := strings.TrimSpace(stripComments(src[:m[0]])); pre == "" {
			return l.assembleExtends(src, m, from, sc, chain)
		}
	}
	var b strings.Builder
	at := 0
	for _, m := range fileTag.FindAllStringSubmatchIndex(src, -1) {
		tag, args := src[m[4]:m[5]], src[m[6]:m[7]]
		where := describeAt(from, src, m[0])
		var repl string
		var msg string
		switch tag {
		case "extends":
			msg = fmt.Sprintf("%s: {%% extends %%} must be the template's first tag", where)
		case "include":
			repl, msg = l.assembleInclude(args, src[m[2]:m[3]], src[m[8]:m[9]], where, from, sc, chain)
		case "import":
			repl, msg = l.assembleImport(args, where, from, sc, chain)
		}
		if msg != "" {
			return "", msg
		}
		b.WriteString(src[at:m[0]])
		b.WriteString(repl)
		at = m[1]
	}
	b.WriteString(src[at:])
	return b.String(), ""
}

// stripComments removes {# … #} and {% comment %}…{% endcomment %} spans.
var commentSpan = regexp.MustCompile(`(?s)\{#.*?#\}|\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}`)

func stripComments(s string) string { return commentSpan.ReplaceAllString(s, "") }

// describeAt names a place in a template for messages: "file:line" or
// "line N" of text written in a story file.
func describeAt(from tmplFile, src string, off int) string {
	if from.rel == "" {
		return fmt.Sprintf("line %d", lineAt(src, off))
	}
	return fmt.Sprintf("%s:%d", from.rel, lineAt(src, off))
}

// fileArg reads the quoted file name a tag starts with and the rest.
func fileArg(args string) (name, rest string, ok bool) {
	m := quotedName.FindStringSubmatch(args)
	if m == nil {
		return "", args, false
	}
	name = m[1]
	if name == "" {
		name = m[2]
	}
	return name, strings.TrimSpace(args[len(m[0]):]), true
}

// assembleInclude is one {% include %}: the file's text in an always-true
// if carrying the tag's trim markers; with k=v … becomes a with block,
// if_exists makes a missing file an empty include.
func (l *loader) assembleInclude(args, ltrim, rtrim, where string, from tmplFile, sc tmplScope, chain []string) (string, string) {
	name, rest, ok := fileArg(args)
	if !ok {
		return "", fmt.Sprintf("%s: {%% include %s %%}: the file name must be a quoted string (a story's templates are put together when it loads)", where, strings.TrimSpace(args))
	}
	optional, only := false, false
	var with []string
	fields := strings.Fields(rest)
	for i := 0; i < len(fields); i++ {
		switch fields[i] {
		case "if_exists":
			optional = true
		case "with":
			for i+1 < len(fields) && strings.Contains(fields[i+1], "=") {
				i++
				with = append(with, fields[i])
			}
		case "only":
			if i != len(fields)-1 {
				return "", fmt.Sprintf("%s: {%% include %q %s %%}: only ends the tag (include \"f\" with k=v only)", where, name, rest)
			}
			only = true
		default:
			return "", fmt.Sprintf("%s: {%% include %q %s %%}: unexpected %q (the forms are include \"f\", include \"f\" with k=v, include \"f\" with k=v only, include \"f\" only, include \"f\" if_exists)", where, name, rest, fields[i])
		}
	}
	f, data, err := l.findTemplate(name, from, sc)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return "", ""
		}
		return "", fmt.Sprintf("%s: {%% include %q %%}: %v", where, name, err)
	}
	if slices.Contains(chain, f.rel) {
		return "", fmt.Sprintf("%s: {%% include %q %%} includes itself: %s", where, name, strings.Join(append(slices.Clone(chain), f.rel), " -> "))
	}
	inner, msg := l.assemble(string(data), f, sc, append(slices.Clone(chain), f.rel))
	if msg != "" {
		return "", msg
	}
	if only {
		// pongo2's include renders the file with its with pairs and
		// nothing of the including template's context; the file's text
		// travels in the include's name. A bare only (Django's form, which
		// pongo2 reads only after with pairs) passes no pair the file uses.
		if len(with) == 0 {
			with = []string{"kitsoki_only=true"}
		}
		return fmt.Sprintf("{%%%s include %q with %s only %s%%}", ltrim, expr.InlineInclude(inner), strings.Join(with, " "), rtrim), ""
	}
	if len(with) > 0 {
		inner = "{% with " + strings.Join(with, " ") + " %}" + inner + "{% endwith %}"
	}
	return fmt.Sprintf("{%%%s if true %%}%s{%% endif %s%%}", ltrim, inner, rtrim), ""
}

// assembleImport is one {% import "f" m1, m2 as alias %}: the named macro
// definitions of the file (renamed for as), which define the names the
// template calls.
func (l *loader) assembleImport(args, where string, from tmplFile, sc tmplScope, chain []string) (string, string) {
	name, rest, ok := fileArg(args)
	if !ok {
		return "", fmt.Sprintf("%s: {%% import %s %%}: the file name must be a quoted string", where, strings.TrimSpace(args))
	}
	f, data, err := l.findTemplate(name, from, sc)
	if err != nil {
		return "", fmt.Sprintf("%s: {%% import %q %%}: %v", where, name, err)
	}
	if slices.Contains(chain, f.rel) {
		return "", fmt.Sprintf("%s: {%% import %q %%} imports itself: %s", where, name, strings.Join(append(slices.Clone(chain), f.rel), " -> "))
	}
	text, msg := l.assemble(string(data), f, sc, append(slices.Clone(chain), f.rel))
	if msg != "" {
		return "", msg
	}
	defs := map[string]string{}
	var order []string
	for _, m := range macroDef.FindAllStringSubmatch(text, -1) {
		defs[m[1]] = m[0]
		order = append(order, m[1])
	}
	var b strings.Builder
	for _, item := range strings.Split(rest, ",") {
		parts := strings.Fields(item)
		if len(parts) == 0 {
			continue
		}
		macro, alias := parts[0], parts[0]
		if len(parts) == 3 && parts[1] == "as" {
			alias = parts[2]
		} else if len(parts) != 1 {
			return "", fmt.Sprintf("%s: {%% import %q %s %%}: write the macros as m1, m2 as other_name", where, name, rest)
		}
		def, ok := defs[macro]
		if !ok {
			return "", fmt.Sprintf("%s: {%% import %q %%}: %s defines no macro %q%s", where, name, f.rel, macro, didYouMean(macro, order))
		}
		if alias != macro {
			def = strings.Replace(def, "macro "+macro, "macro "+alias, 1)
		}
		b.WriteString(def)
	}
	return b.String(), ""
}

// assembleExtends is a template whose first tag is {% extends "base" %}:
// the base (itself assembled) with the blocks the template defines
// replacing the base's, {{ block.Super }} standing for the base's own.
func (l *loader) assembleExtends(src string, m []int, from tmplFile, sc tmplScope, chain []string) (string, string) {
	where := describeAt(from, src, m[0])
	name, rest, ok := fileArg(src[m[6]:m[7]])
	if !ok || rest != "" {
		return "", fmt.Sprintf("%s: {%% extends %s %%}: the base must be one quoted file name", where, strings.TrimSpace(src[m[6]:m[7]]))
	}
	f, data, err := l.findTemplate(name, from, sc)
	if err != nil {
		return "", fmt.Sprintf("%s: {%% extends %q %%}: %v", where, name, err)
	}
	if slices.Contains(chain, f.rel) {
		return "", fmt.Sprintf("%s: {%% extends %q %%} extends itself: %s", where, name, strings.Join(append(slices.Clone(chain), f.rel), " -> "))
	}
	base, msg := l.assemble(string(data), f, sc, append(slices.Clone(chain), f.rel))
	if msg != "" {
		return "", msg
	}
	// The child's own references (includes in its blocks) resolve too.
	child, msg := l.assemble(src[m[1]:], from, sc, chain)
	if msg != "" {
		return "", msg
	}
	overrides, _, err := parseBlocks(child)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", describeName(from), err)
	}
	baseBlocks, tree, err := parseBlocks(base)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", f.rel, err)
	}
	for name := range overrides {
		if _, ok := baseBlocks[name]; !ok {
			return "", fmt.Sprintf("%s: {%% block %s %%} overrides no block of %s (it declares %s)%s", describeName(from), name, f.rel, strings.Join(sortedKeys(boolSet(baseBlocks)), ", "), didYouMean(name, sortedKeys(boolSet(baseBlocks))))
		}
	}
	var b strings.Builder
	// A macro the child defines outside its blocks stays callable.
	for _, def := range macroDef.FindAllString(outsideBlocks(child), -1) {
		b.WriteString(def)
	}
	writeBlocks(&b, tree, overrides)
	return b.String(), ""
}

func describeName(from tmplFile) string {
	if from.rel == "" {
		return "the template"
	}
	return from.rel
}

// tmplNode is a piece of a parsed template: text, or a block with its
// children.
type tmplNode struct {
	text     string
	block    string // "" for text
	open     string // the block's opening tag as written
	children []*tmplNode
}

// parseBlocks cuts a template at its block tags: the tree, and every
// block's body by name (the text between its tags, nested blocks
// included).
func parseBlocks(src string) (map[string]string, []*tmplNode, error) {
	bodies := map[string]string{}
	var root []*tmplNode
	type frame struct {
		n     *tmplNode
		start int
	}
	var stack []frame
	add := func(n *tmplNode) {
		if len(stack) == 0 {
			root = append(root, n)
		} else {
			p := stack[len(stack)-1].n
			p.children = append(p.children, n)
		}
	}
	at := 0
	for _, m := range anyBlockTag.FindAllStringSubmatchIndex(src, -1) {
		if m[0] > at {
			add(&tmplNode{text: src[at:m[0]]})
		}
		if strings.HasPrefix(src[m[2]:m[3]], "block") {
			n := &tmplNode{block: src[m[4]:m[5]], open: src[m[0]:m[1]]}
			if _, dup := bodies[n.block]; dup {
				return nil, nil, fmt.Errorf("line %d: {%% block %s %%} is defined twice", lineAt(src, m[0]), n.block)
			}
			bodies[n.block] = ""
			add(n)
			stack = append(stack, frame{n: n, start: m[1]})
		} else {
			if len(stack) == 0 {
				return nil, nil, fmt.Errorf("line %d: {%% endblock %%} without a {%% block %%}", lineAt(src, m[0]))
			}
			top := stack[len(stack)-1]
			bodies[top.n.block] = src[top.start:m[0]]
			stack = stack[:len(stack)-1]
		}
		at = m[1]
	}
	if len(stack) > 0 {
		return nil, nil, fmt.Errorf("{%% block %s %%} is never closed with {%% endblock %%}", stack[len(stack)-1].n.block)
	}
	if at < len(src) {
		add(&tmplNode{text: src[at:]})
	}
	return bodies, root, nil
}

// outsideBlocks is a template's text outside its blocks.
func outsideBlocks(src string) string {
	_, tree, err := parseBlocks(src)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, n := range tree {
		if n.block == "" {
			b.WriteString(n.text)
		}
	}
	return b.String()
}

// writeBlocks writes a base's tree with the overriding blocks in place.
// The block tags stay, so a template that extends this one can override
// them in turn.
func writeBlocks(b *strings.Builder, nodes []*tmplNode, overrides map[string]string) {
	for _, n := range nodes {
		if n.block == "" {
			b.WriteString(n.text)
			continue
		}
		var own strings.Builder
		writeBlocks(&own, n.children, overrides)
		b.WriteString("{% block " + n.block + " %}")
		if body, ok := overrides[n.block]; ok {
			b.WriteString(blockSuper.ReplaceAllLiteralString(body, own.String()))
		} else {
			b.WriteString(own.String())
		}
		b.WriteString("{% endblock %}")
	}
}

// findTemplate reads the file a reference names, along the template's
// search path.
func (l *loader) findTemplate(name string, from tmplFile, sc tmplScope) (tmplFile, []byte, error) {
	if filepath.IsAbs(name) {
		return tmplFile{}, nil, fmt.Errorf("the file name must be relative (to the story's %s)", map[tmplKind]string{viewTemplate: "views/ directory", promptTemplate: "directory"}[sc.kind])
	}
	var cands []string // absolute candidate paths, in order
	switch {
	case sc.kind == promptTemplate && strings.HasPrefix(name, "@story/"):
		cands = []string{filepath.Join(sc.storyDir, filepath.FromSlash(strings.TrimPrefix(name, "@story/")))}
	case sc.kind == promptTemplate && strings.HasPrefix(name, "@shared/"):
		rest := filepath.FromSlash(strings.TrimPrefix(name, "@shared/"))
		for _, d := range l.sharedDirs(sc.storyDir) {
			cands = append(cands, filepath.Join(d, rest))
		}
		if len(cands) == 0 {
			return tmplFile{}, nil, fmt.Errorf("@shared/ names the prompts.shared directories, and the story declares none")
		}
	case sc.kind == promptTemplate && strings.HasPrefix(name, "@import/"):
		alias, rest, _ := strings.Cut(strings.TrimPrefix(name, "@import/"), "/")
		dir := l.importDir(alias)
		if dir == "" {
			return tmplFile{}, nil, fmt.Errorf("@import/%s/: %q is not an import of this story", alias, alias)
		}
		cands = []string{filepath.Join(dir, filepath.FromSlash(rest))}
	case sc.kind == promptTemplate:
		if l.promptOverlay != "" {
			cands = append(cands, filepath.Join(l.promptOverlay, filepath.FromSlash(name)))
		}
		cands = append(cands, filepath.Join(sc.storyDir, filepath.FromSlash(name)))
		if from.abs != "" {
			cands = append(cands, filepath.Join(filepath.Dir(from.abs), filepath.FromSlash(name)))
		}
	default:
		if from.abs != "" {
			cands = append(cands, filepath.Join(filepath.Dir(from.abs), filepath.FromSlash(name)))
		}
		cands = append(cands, filepath.Join(sc.storyDir, "views", filepath.FromSlash(name)))
	}
	var firstErr error
	for _, c := range cands {
		rel := l.relPath(c)
		data, err := l.ws.Read(c, rel)
		if err == nil {
			if _, rerr := l.ws.Resolve(l.dir, c); rerr != nil {
				return tmplFile{}, nil, rerr
			}
			return tmplFile{abs: c, rel: rel}, data, nil
		}
		if firstErr == nil || !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if errors.Is(firstErr, fs.ErrNotExist) {
		tried := make([]string, len(cands))
		for i, c := range cands {
			tried[i] = l.relPath(c)
		}
		return tmplFile{}, nil, fmt.Errorf("no such file (looked for %s): %w", strings.Join(tried, ", "), fs.ErrNotExist)
	}
	return tmplFile{}, nil, fmt.Errorf("%v", unwrapPathErr(firstErr))
}

// viewScope is where the file references of a view template written in f
// resolve: the views/ directory of the story f belongs to.
func (l *loader) viewScope(f *file) tmplScope {
	dir := l.dir
	if f.dir != "" {
		dir = f.dir
	}
	return tmplScope{kind: viewTemplate, storyDir: dir}
}

// compileViewText is compileText for a view's templates: their file
// references are resolved first.
func (l *loader) compileViewText(f *file, n *yaml.Node, path string, assign func(*expr.Text)) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || !needsAssembly(d.Value) {
		l.compileText(f, n, path, assign)
		return
	}
	src, msg := l.assemble(d.Value, tmplFile{}, l.viewScope(f), nil)
	if msg != "" {
		l.errAt(f, n, path, "%s", msg)
		return
	}
	l.compileText(f, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: src, Line: d.Line, Column: d.Column, Style: d.Style}, path, assign)
}
