package story

import (
	"regexp"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/compose"
)

// InterfaceNamespace prefixes the invokes of a host interface:
// iface.<name>.<op>.
const InterfaceNamespace = compose.InterfaceNamespace

// Interface is a host_interfaces: entry: a named set of operations that a
// story invokes as iface.<name>.<op>, answered by the handler it is bound
// to (Default unless a flow's host_bindings rebinds it).
type Interface struct {
	Name        string
	Description string
	Ops         []string // the operations: names, sorted (metadata: input/output are not checked)
	Default     string   // the handler iface.<name>.<op> goes to, as <Default>.<op>; "" = none
	Pos         Pos      // of the entry's key
}

var (
	interfaceKeys   = &keySpec{v1: []string{"description", "operations", "default"}}
	interfaceOpKeys = &keySpec{v1: []string{"input", "output", "description"}}
	interfaceNameRx = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	handlerNameRx   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$`)
)

// loadInterfaces reads host_interfaces:.
func (l *loader) loadInterfaces(f *file, e entry) {
	es, _ := l.entries(f, e.val, "host_interfaces")
	if l.st.Interfaces == nil {
		l.st.Interfaces = map[string]*Interface{}
	}
	for _, ie := range es {
		path := joinPath("host_interfaces", ie.name)
		if !interfaceNameRx.MatchString(ie.name) {
			l.errAt(f, ie.key, "host_interfaces", "key %q must be an interface name (letters, digits, _), invoked as iface.<name>.<op>", ie.name)
			continue
		}
		_, exists := l.st.Interfaces[ie.name]
		if !l.dup(f, ie, path, "host_interfaces", exists) {
			continue
		}
		fs, ok := l.fields(f, ie.val, path, interfaceKeys)
		if !ok {
			continue
		}
		in := &Interface{Name: ie.name, Pos: l.pos(f, ie.key)}
		strField(l, f, fs, path, "description", &in.Description)
		if de, ok := fs.get("default"); ok {
			if s, ok := l.str(f, de.val, joinPath(path, "default")); ok {
				switch {
				case s == "":
				case strings.HasPrefix(s, InterfaceNamespace) || !handlerNameRx.MatchString(s):
					l.errAt(f, de.val, joinPath(path, "default"), "%q is not a handler name: write the handler that answers iface.%s.<op>, e.g. host.run", s, ie.name)
				default:
					in.Default = s
				}
			}
		}
		if oe, ok := fs.get("operations"); ok {
			ops, _ := l.entries(f, oe.val, joinPath(path, "operations"))
			for _, op := range ops {
				l.fields(f, op.val, joinPath(joinPath(path, "operations"), op.name), interfaceOpKeys)
				in.Ops = append(in.Ops, op.name)
			}
			sort.Strings(in.Ops)
		}
		l.st.Interfaces[ie.name] = in
	}
}

// InterfaceOf returns the declared interface an invoke name belongs to
// (iface.<name> or iface.<name>.<op>).
func (st *Story) InterfaceOf(invoke string) (*Interface, bool) {
	rest, ok := strings.CutPrefix(invoke, InterfaceNamespace)
	if !ok {
		return nil, false
	}
	name, _, _ := strings.Cut(rest, ".")
	in, ok := st.Interfaces[name]
	return in, ok
}
