package story

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// file is one YAML file of the story.
type file struct {
	rel string // relative to the story directory, slash-separated
	abs string
	// data is the file's content, held while the file is parsed (and, for
	// an imported file, until the last import folding it parsed it again):
	// the loaded story keeps what it needs of it, and the checks keep nodes.
	data []byte

	ws workspace.Root // where it is read from (its Read)

	// An imported story's document (imports.go): dir is the directory its
	// relative paths were written against, imported that it was folded.
	dir      string
	imported bool
	chain    *compose.Chain // renames the references of its templates and expressions
	taken    bool           // read for an import's names (takeDoc)
	phased   bool           // its phase sections were expanded once, with their problems reported (expandUnitPhases)

	submitted bool // its parse is queued on the workers (parseAhead)

	linesOnce sync.Once
	lines     []string // the file read again and split into lines on first use (line)

	parseOnce  sync.Once
	doc        *yaml.Node   // parsed top-level node, nil if empty or broken
	parseDiags []Diagnostic // read and syntax errors
}

// line returns line n (1-based) of the file, or "". Only diagnostics need
// the lines (to point inside a template or expression), and the content is
// not kept once the file is parsed, so the file is read again on first use
// and split into lines; compile jobs may ask concurrently. Should the file
// have changed since, the callers' check of the line against the node's
// value fails and they point at the node instead.
func (f *file) line(n int) string {
	f.linesOnce.Do(func() {
		if data, err := f.ws.Read(f.abs, f.rel); err == nil {
			f.lines = strings.Split(string(data), "\n")
		}
	})
	if n < 1 || n > len(f.lines) {
		return ""
	}
	return f.lines[n-1]
}

// entry is one key/value pair of a mapping node.
type entry struct {
	name     string
	key, val *yaml.Node
}

// keySpec lists the keys a mapping accepts: v1 keys are read. Any other
// key is an unknown-key error with a suggestion; no key is accepted and
// ignored, and none of Kitsoki's is refused (docs/kitsoki.md).
type keySpec struct {
	v1 []string
}

func (l *loader) pos(f *file, n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: f.rel}
	}
	return Pos{File: f.rel, Line: n.Line, Col: n.Column}
}

// errAt records a load error at node n.
func (l *loader) errAt(f *file, n *yaml.Node, path, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{Pos: l.pos(f, n), Path: path, Message: fmt.Sprintf(format, args...)})
}

// warnAt records a warning at node n.
func (l *loader) warnAt(f *file, n *yaml.Node, path, format string, args ...any) {
	l.warns = append(l.warns, Diagnostic{Pos: l.pos(f, n), Path: path, Message: fmt.Sprintf(format, args...)})
}

// deref follows aliases and unwraps documents.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch n.Kind {
		case yaml.AliasNode:
			n = n.Alias
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		default:
			return n
		}
	}
	return nil
}

// isNull reports whether n is absent or an explicit YAML null.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "an unexpected node"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// entries returns the pairs of a mapping node in document order. Merge keys
// (<<) are expanded, keys written explicitly winning over merged ones; a key
// written twice is an error and the first occurrence is kept. A null node
// yields no entries; any other non-mapping is an error (ok is false).
func (l *loader) entries(f *file, n *yaml.Node, path string) (out []entry, ok bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		l.errAt(f, n, path, "expected a mapping, got %s%s", kindName(n), shapeHint(path, n))
		return nil, false
	}
	out = make([]entry, 0, len(n.Content)/2)
	var seen map[string]bool // names in out, for large mappings only
	if len(n.Content)/2 > smallMapping {
		seen = make(map[string]bool, len(n.Content)/2)
	}
	var merged []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, l.mergeEntries(f, v, path)...)
			continue
		}
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			l.errAt(f, k, path, "mapping keys must be plain names")
			continue
		}
		name := kd.Value
		if hasEntry(out, seen, name) {
			l.errAt(f, k, joinPath(path, name), "duplicate key %q", name)
			continue
		}
		out = addEntry(out, seen, entry{name: name, key: k, val: v})
	}
	for _, e := range merged {
		if !hasEntry(out, seen, e.name) {
			out = addEntry(out, seen, e)
		}
	}
	return out, true
}

// smallMapping is the size up to which entries finds a name by scanning
// rather than through a map (cheaper for the few keys most mappings have).
const smallMapping = 16

// hasEntry reports whether out holds name; seen, when not nil, indexes out.
func hasEntry(out []entry, seen map[string]bool, name string) bool {
	if seen != nil {
		return seen[name]
	}
	for i := range out {
		if out[i].name == name {
			return true
		}
	}
	return false
}

// addEntry appends e to out, indexing it in seen when there is one.
func addEntry(out []entry, seen map[string]bool, e entry) []entry {
	if seen != nil {
		seen[e.name] = true
	}
	return append(out, e)
}

// mergeEntries returns the pairs merged in by a "<<" key (a mapping or a
// list of mappings; earlier mappings win).
func (l *loader) mergeEntries(f *file, v *yaml.Node, path string) []entry {
	v = deref(v)
	var srcs []*yaml.Node
	switch {
	case v != nil && v.Kind == yaml.MappingNode:
		srcs = []*yaml.Node{v}
	case v != nil && v.Kind == yaml.SequenceNode:
		srcs = v.Content
	default:
		l.errAt(f, v, path, "a merge key (<<) needs a mapping or a list of mappings")
		return nil
	}
	var out []entry
	seen := map[string]bool{}
	for _, s := range srcs {
		es, _ := l.entries(f, s, path)
		for _, e := range es {
			if !seen[e.name] {
				seen[e.name] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// fieldSet is the v1 keys of a mapping, in document order.
type fieldSet []entry

// get returns the entry for key name.
func (fs fieldSet) get(name string) (entry, bool) {
	for _, e := range fs {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

// at returns the entry for key name, or a zero entry.
func (fs fieldSet) at(name string) entry {
	e, _ := fs.get(name)
	return e
}

// fields checks the keys of mapping n against spec and returns the v1 ones.
// Unknown keys are errors with a suggestion.
func (l *loader) fields(f *file, n *yaml.Node, path string, spec *keySpec) (fieldSet, bool) {
	fs, _, ok := l.fieldsU(f, n, path, spec)
	return fs, ok
}

// fieldsU is fields that also returns how many unknown keys were reported.
func (l *loader) fieldsU(f *file, n *yaml.Node, path string, spec *keySpec) (_ fieldSet, unknown int, _ bool) {
	es, ok := l.entries(f, n, path)
	if !ok {
		return nil, 0, false
	}
	out := es[:0] // es is ours: keep the v1 entries in place
	for _, e := range es {
		switch {
		case slices.Contains(spec.v1, e.name):
			out = append(out, e)
		default:
			cands := spec.v1
			l.errAt(f, e.key, joinPath(path, e.name), "unknown key %q%s", e.name, didYouMean(e.name, cands))
			unknown++
		}
	}
	return fieldSet(out), unknown, true
}

// str reads a scalar as a string (null is ""). Numbers and booleans keep the
// text they were written with.
func (l *loader) str(f *file, n *yaml.Node, path string) (string, bool) {
	d := deref(n)
	if isNull(d) {
		return "", true
	}
	if d.Kind != yaml.ScalarNode {
		l.errAt(f, d, path, "expected a string, got %s%s", kindName(d), shapeHint(path, d))
		return "", false
	}
	return d.Value, true
}

// boolean reads a YAML boolean.
func (l *loader) boolean(f *file, n *yaml.Node, path string) (bool, bool) {
	d := deref(n)
	if isNull(d) {
		return false, true
	}
	if d.Kind == yaml.ScalarNode && d.Tag == "!!bool" {
		if v, ok := plainScalar(d); ok {
			return v.(bool), true
		}
		var b bool
		if err := d.Decode(&b); err == nil {
			return b, true
		}
	}
	l.errAt(f, d, path, "expected true or false, got %s%s", kindName(d), shapeHint(path, d))
	return false, false
}

// integer reads a YAML integer.
func (l *loader) integer(f *file, n *yaml.Node, path string) (int64, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && d.Tag == "!!int" {
		if v, ok := plainScalar(d); ok {
			return int64(v.(int)), true
		}
		var i int64
		if err := d.Decode(&i); err == nil {
			return i, true
		}
	}
	if d == nil {
		d = n
	}
	l.errAt(f, d, path, "expected an integer, got %s%s", kindName(d), shapeHint(path, d))
	return 0, false
}

// strList reads a list of scalars (null is an empty list).
func (l *loader) strList(f *file, n *yaml.Node, path string) ([]string, bool) {
	d := deref(n)
	if isNull(d) {
		return nil, true
	}
	if d.Kind != yaml.SequenceNode {
		l.errAt(f, d, path, "expected a list of strings, got %s%s", kindName(d), shapeHint(path, d))
		return nil, false
	}
	out := make([]string, 0, len(d.Content))
	ok := true
	for i, c := range d.Content {
		s, good := l.str(f, c, indexPath(path, i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// value decodes any YAML node into plain Go values (map[string]any, []any,
// string, int, float64, bool, nil).
func (l *loader) value(f *file, n *yaml.Node, path string) (any, bool) {
	if n == nil {
		return nil, true
	}
	var v any
	if err := n.Decode(&v); err != nil {
		l.errAt(f, n, path, "cannot decode value: %v", err)
		return nil, false
	}
	return v, true
}

// list reads a sequence node (null is empty).
func (l *loader) list(f *file, n *yaml.Node, path string) ([]*yaml.Node, bool) {
	d := deref(n)
	if isNull(d) {
		return nil, true
	}
	if d.Kind != yaml.SequenceNode {
		l.errAt(f, d, path, "expected a list, got %s%s", kindName(d), shapeHint(path, d))
		return nil, false
	}
	return d.Content, true
}

// number reads a YAML number (an integer or a float).
func (l *loader) number(f *file, n *yaml.Node, path string) (float64, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && (d.Tag == "!!int" || d.Tag == "!!float") {
		var v float64
		if err := d.Decode(&v); err == nil {
			return v, true
		}
	}
	if d == nil {
		d = n
	}
	l.errAt(f, d, path, "expected a number, got %s", kindName(d))
	return 0, false
}
