package testrunner

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
)

// Binding is one host_bindings entry. Key is what is bound: a handler
// (host.artifacts_dir: host.artifacts_dir, "run this handler for real") or
// an interface (transport: host.artifacts_dir, "answer iface.transport.<op>
// with host.artifacts_dir.<op>"). Handler is the handler it is bound to.
type Binding struct {
	Key       string
	Handler   string
	Interface bool // Key names an interface (no dot in it)
	Line, Col int  // position of the entry's key in the fixture file
}

// interfaceNamespace prefixes the invokes of a host interface:
// iface.<name>.<op>.
const interfaceNamespace = story.InterfaceNamespace

var (
	bindingHandlerRx   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$`)
	bindingInterfaceRx = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// bindingErr is a fixture error at node n of file: file:line:col and the
// message (which names the key path).
func bindingErr(file string, n *yaml.Node, format string, args ...any) error {
	e := yamlnode.At(n, "", format, args...)
	e.File = file
	return e
}

// parseBindings reads host_bindings: a mapping of handler or interface
// names to handler names.
func parseBindings(n *yaml.Node, file string) ([]Binding, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil, bindingErr(file, n, "host_bindings must be a mapping of {interface or handler: handler}, e.g. host_bindings: {host.run: host.run} or {transport: host.artifacts_dir}; got %s", yamlnode.KindName(n))
	}
	seen := map[string]bool{}
	var out []Binding
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, bindingErr(file, k, "host_bindings: a key must be a handler name (host.run) or an interface name (transport), got %s", yamlnode.KindName(k))
		}
		where := fmt.Sprintf("host_bindings[%q]", k.Value)
		if seen[k.Value] {
			return nil, bindingErr(file, k, "%s: key appears twice", where)
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || v.Value == "" {
			return nil, bindingErr(file, v, "%s: the value must be a handler name such as host.artifacts_dir, got %s", where, yamlnode.KindName(v))
		}
		if !bindingHandlerRx.MatchString(v.Value) {
			return nil, bindingErr(file, v, "%s: %q is not a handler name: write a dotted invoke name such as host.artifacts_dir", where, v.Value)
		}
		if strings.HasPrefix(v.Value, interfaceNamespace) {
			return nil, bindingErr(file, v, "%s: %q is an interface, not a handler: bind the interface to the handler that implements it", where, v.Value)
		}
		b := Binding{Key: k.Value, Handler: v.Value, Line: k.Line, Col: k.Column}
		switch {
		case bindingInterfaceRx.MatchString(k.Value):
			b.Interface = true
		case !bindingHandlerRx.MatchString(k.Value):
			return nil, bindingErr(file, k, "%s: %q is neither a handler name (host.run) nor an interface name (transport)", where, k.Value)
		case strings.HasPrefix(k.Value, interfaceNamespace):
			return nil, bindingErr(file, k, "%s: key an interface by its name without %q: %s: %s", where, interfaceNamespace, strings.TrimPrefix(k.Value, interfaceNamespace), v.Value)
		case k.Value != v.Value:
			return nil, bindingErr(file, v, "%s: a handler can only be bound to itself (%s: %s), which runs the real handler in this flow; to route calls to %s, bind an interface (transport: %s)", where, k.Value, k.Value, v.Value, v.Value)
		}
		out = append(out, b)
	}
	return out, nil
}

// checkBindings refuses bindings nothing in the flow could honour: a
// handler nothing answers (not built in, not stubbed, not in the
// cassette), an agent verb or a host plugin (neither runs in a flow), an
// interface the story never invokes, a handler bound live that a stub
// answers instead. A handler the host_cassette also answers is fine: its
// episodes answer first and the bound handler answers their misses
// (fallsBack).
func checkBindings(fx *Fixture, st *story.Story, c *replay.Cassette) error {
	invokes := replay.InvokeNames(st)
	for _, b := range fx.HostBindings {
		where := fmt.Sprintf("%s:%d:%d: host_bindings[%q]", fx.File, b.Line, b.Col, b.Key)
		stub, stubbed := stubFor(fx.HostHandlers, b.Handler)
		_, recorded := cassetteFor(c, b.Handler)
		_, builtin := catalog.Lookup(b.Handler)
		switch {
		case !b.Interface && stubbed:
			return fmt.Errorf("%s: host_handlers[%q] also stubs it, so the real handler would never answer: drop the binding or the stub", where, stub)
		case b.Interface && (stubbed || recorded):
		case builtin && strings.HasPrefix(b.Handler, host.AgentNamespace):
			return fmt.Errorf("%s: agents do not run in flows (no transport is installed): answer %s with a host_handlers stub or a host_cassette instead", where, b.Handler)
		case builtin:
		default:
			if _, ok := st.HostPluginFor(b.Handler); ok {
				return fmt.Errorf("%s: %s is served by a host plugin of the story, and flows do not start host plugins: stub it in host_handlers", where, b.Handler)
			}
			if u, ok := catalog.Refused(b.Handler); ok {
				return fmt.Errorf("%s: kitsoki does not provide %s (it needs %s), so nothing would answer %q in this flow: stub it in host_handlers", where, u.Name, u.Needs, b.Handler)
			}
			return fmt.Errorf("%s: nothing in this flow answers %q: it is not a handler kitsoki provides (kitsoki hosts lists them) and no host_handlers stub or host_cassette episode answers it", where, b.Handler)
		}
		if b.Interface {
			if name, ok := cassetteFor(c, interfaceNamespace+b.Key); ok {
				return fmt.Errorf("%s: the host_cassette's episodes answer %s itself, and the binding would take their calls: drop the binding or those episodes", where, name)
			}
			if _, declared := st.Interfaces[b.Key]; !declared && !invokesInterface(invokes, b.Key) {
				return fmt.Errorf("%s: the story declares no host interface %q (host_interfaces: %s) and invokes no %s%s.<op>, so this binding would route nothing",
					where, b.Key, orNone(sortedKeys(st.Interfaces)), interfaceNamespace, b.Key)
			}
		}
	}
	return nil
}

// cassetteFor returns the cassette handler that answers name (exactly or
// as its longest dotted prefix), if c has episodes for one.
func cassetteFor(c *replay.Cassette, name string) (string, bool) {
	if c == nil {
		return "", false
	}
	names := map[string]*Stub{}
	for _, h := range c.Handlers() {
		names[h] = nil
	}
	return stubFor(names, name)
}

// stubFor returns the entry of stubs that answers name: exactly, or the
// longest dotted prefix, as the host resolves it.
func stubFor(stubs map[string]*Stub, name string) (string, bool) {
	for p := name; ; {
		if _, ok := stubs[p]; ok {
			return p, true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return "", false
		}
		p = p[:i]
	}
}

func invokesInterface(invokes []string, name string) bool {
	for _, n := range invokes {
		if n == interfaceNamespace+name || strings.HasPrefix(n, interfaceNamespace+name+".") {
			return true
		}
	}
	return false
}

// bound reports whether a binding answers invoke name: the bound handler
// itself or an op under it, or an op of a bound interface.
func bound(bs []Binding, name string) bool {
	for _, b := range bs {
		if b.Interface {
			if invokesInterface([]string{name}, b.Key) {
				return true
			}
			continue
		}
		if name == b.Handler || strings.HasPrefix(name, b.Handler+".") {
			return true
		}
	}
	return false
}

// fallsBack reports whether a host_cassette miss of invoke name goes to
// the real handler: name is bound (bound), or it is the handler an
// interface is bound to, or an op under it (the loader rewrites
// iface.<name>.<op> to the handler's own invoke names).
func fallsBack(bs []Binding, name string) bool {
	if bound(bs, name) {
		return true
	}
	for _, b := range bs {
		if b.Interface && (name == b.Handler || strings.HasPrefix(name, b.Handler+".")) {
			return true
		}
	}
	return false
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
