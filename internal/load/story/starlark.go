package story

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/sidecar"
	"go.yaml.in/yaml/v3"
)

// starlarkInvoke is host.starlark.run's invoke name.
const starlarkInvoke = "host.starlark.run"

// bareExpr matches a with.inputs value written as an expression without
// {{ }}: it would reach the script as that literal text.
var bareExpr = regexp.MustCompile(`^\s*(world|slots|submitted|result)\.[A-Za-z_]|\?\?|\?\.`)

// starlarkWith checks the with: of a host.starlark.run invoke at load: its
// keys, that a literal script and its .star.yaml sidecar exist inside the
// workspace and the sidecar is well formed, and that the inputs fit the
// sidecar (required ones given, literals of the declared type, no bare
// expression). A templated script is checked when it is called.
func (l *loader) starlarkWith(f *file, with *yaml.Node, path string) {
	es, _ := l.entries(f, with, path)
	var scriptNode, inputsNode *yaml.Node
	for _, e := range es {
		switch e.name {
		case "script":
			scriptNode = deref(e.val)
		case "inputs":
			inputsNode = deref(e.val)
		default:
			l.errAt(f, e.key, joinPath(path, e.name), "%s takes with.script and with.inputs; %q is not one of its keys", starlarkInvoke, e.name)
		}
	}
	if scriptNode == nil {
		l.errAt(f, with, path, "%s needs with.script: the path of a .star file (relative to the story)", starlarkInvoke)
		return
	}
	sp := joinPath(path, "script")
	if scriptNode.Kind != yaml.ScalarNode || scriptNode.Tag != "!!str" || scriptNode.Value == "" {
		l.errAt(f, scriptNode, sp, "with.script must be the path of a .star file, got %s", kindName(scriptNode))
		return
	}
	raw := scriptNode.Value
	if isTemplated(raw) {
		return
	}
	real, err := l.ws.Resolve(l.dir, raw)
	if err == nil {
		var st os.FileInfo
		if st, err = l.ws.Stat(real); err == nil && !st.Mode().IsRegular() {
			err = workspace.ErrNotRegular
		}
	}
	if err != nil {
		l.errAt(f, scriptNode, sp, "%s", fileErr("script", raw, err))
		return
	}
	data, err := l.ws.Read(real+sidecar.Suffix, raw+sidecar.Suffix)
	if errors.Is(err, os.ErrNotExist) {
		l.errAt(f, scriptNode, sp, "script %q has no sidecar %s%s beside it: declare its inputs: and outputs: there", raw, raw, sidecar.Suffix)
		return
	}
	if err != nil {
		l.errAt(f, scriptNode, sp, "%s", fileErr("sidecar", raw+sidecar.Suffix, err))
		return
	}
	sc, err := sidecar.Parse(data, raw+sidecar.Suffix)
	if err != nil {
		l.errAt(f, scriptNode, sp, "sidecar: %v", err)
		return
	}
	ip := joinPath(path, "inputs")
	given := map[string]bool{}
	switch {
	case inputsNode == nil || isNull(inputsNode):
	case inputsNode.Kind == yaml.ScalarNode && isTemplated(inputsNode.Value):
		return // a template yields the whole map: checked at call
	case inputsNode.Kind != yaml.MappingNode:
		l.errAt(f, inputsNode, ip, "with.inputs must be a mapping of input names to values, got %s", kindName(inputsNode))
		return
	default:
		ies, _ := l.entries(f, inputsNode, ip)
		for _, e := range ies {
			given[e.name] = true
			l.starlarkInput(f, sc, raw, e, joinPath(ip, e.name))
		}
	}
	var missing []string
	for _, in := range sc.Inputs {
		if in.Required && !given[in.Name] {
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		at := inputsNode
		if at == nil || isNull(at) {
			at = scriptNode
		}
		l.errAt(f, at, ip, "script %q requires input %s (declared in %s%s); add %s under with.inputs",
			raw, strings.Join(quoteAll(missing), ", "), raw, sidecar.Suffix, plural(len(missing), "it", "them"))
	}
}

// starlarkInput checks one with.inputs entry against the sidecar.
func (l *loader) starlarkInput(f *file, sc *sidecar.Sidecar, script string, e entry, path string) {
	d := deref(e.val)
	if d == nil || containsTemplate(d) {
		return
	}
	if d.Kind == yaml.ScalarNode && d.Tag == "!!str" && bareExpr.MatchString(d.Value) {
		l.errAt(f, d, path, "%q is an expression written without {{ }}: the script would get this text, not its value; write \"{{ %s }}\"",
			d.Value, strings.TrimSpace(d.Value))
		return
	}
	decl, ok := sc.Input(e.name)
	if !ok {
		return // undeclared inputs pass through
	}
	v, ok := l.value(f, d, path)
	if !ok || v == nil {
		return
	}
	if !sidecar.Fits(decl.Type, normYAML(v)) {
		l.errAt(f, d, path, "input %q is declared %s in %s%s but this literal is %s; write a value of type %s, or template one: \"{{ world.x }}\"",
			e.name, decl.Type, script, sidecar.Suffix, sidecar.TypeName(normYAML(v)), decl.Type)
	}
}

// containsTemplate reports whether any string under n holds {{.
func containsTemplate(n *yaml.Node) bool {
	n = deref(n)
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		return isTemplated(n.Value)
	}
	return slices.ContainsFunc(n.Content, containsTemplate)
}

// normYAML turns what yaml decodes (map[string]interface{} and friends)
// into the shapes kitsoki carries.
func normYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normYAML(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normYAML(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normYAML(e)
		}
		return out
	}
	return v
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
