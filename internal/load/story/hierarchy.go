package story

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
)

var stateKinds = []string{KindAtomic, KindCompound, KindParallel}

// loadHierarchy reads a state's type:, initial: and nested states:, and
// checks that they fit together: a compound state has children and an
// initial child, a parallel state has regions and no initial:, an atomic
// state has neither.
func (l *loader) loadHierarchy(f *file, fs fieldSet, path string, s *State) {
	s.Kind = KindAtomic
	te, hasType := fs.get("type")
	if hasType {
		p := joinPath(path, "type")
		if k, ok := l.str(f, te.val, p); ok {
			switch k {
			case KindAtomic, KindCompound, KindParallel:
				s.Kind = k
			default:
				l.errAt(f, te.val, p, "unknown state type %q (one of %s)%s", k, strings.Join(stateKinds, ", "), didYouMean(k, stateKinds))
				return
			}
		}
	}
	ie, hasInitial := fs.get("initial")
	se, hasStates := fs.get("states")
	switch s.Kind {
	case KindAtomic:
		if hasStates {
			l.errAt(f, se.key, joinPath(path, "states"), "nested states: need type: compound (one child at a time, entered at initial:) or type: parallel (every child at once)")
		}
		if hasInitial {
			l.errAt(f, ie.key, joinPath(path, "initial"), "initial: applies only to a type: compound state")
		}
		return
	case KindParallel:
		if hasInitial {
			l.errAt(f, ie.key, joinPath(path, "initial"), "a parallel state enters every region at once; initial: applies only to a type: compound state")
		}
	}
	if !hasStates {
		l.errAt(f, te.key, path, "a %s state needs states: (its children)", s.Kind)
		return
	}
	l.loadStateMap(f, se.val, joinPath(path, "states"), s)
	if len(s.Children) == 0 {
		l.errAt(f, se.key, joinPath(path, "states"), "a %s state needs at least one child under states:", s.Kind)
		return
	}
	if s.Kind != KindCompound {
		return
	}
	if !hasInitial {
		l.errAt(f, te.key, path, "a compound state needs initial: (the child it enters first; one of %s)", strings.Join(l.childNames(s), ", "))
		return
	}
	p := joinPath(path, "initial")
	raw, ok := l.str(f, ie.val, p)
	if !ok {
		return
	}
	s.InitialPos = l.pos(f, deref(ie.val))
	switch {
	case strings.Contains(raw, "{%"):
		// Tags ({% if %}) make it a text template.
		l.compileText(f, ie.val, p, func(t *expr.Text) { s.InitialText = t })
		return
	case isTemplated(raw):
		// A value template, like a templated target ({{ a ? 'x' : 'y' }}).
		l.compileValue(f, ie.val, p, func(v *expr.Value) { s.InitialValue = v })
		return
	}
	child, ok := s.ChildNamed(raw)
	if !ok {
		names := l.childNames(s)
		l.errAt(f, ie.val, p, "initial: %q is not a child of %s (children: %s)%s", raw, s.Name, strings.Join(names, ", "), didYouMean(raw, names))
		return
	}
	s.Initial = child
}

// childNames lists a state's children by their own names.
func (l *loader) childNames(s *State) []string {
	out := make([]string, len(s.Children))
	for i, c := range s.Children {
		out[i] = strings.TrimPrefix(c, s.Name+".")
	}
	return out
}

// ChildNamed finds a child by its own name or its full path.
func (s *State) ChildNamed(name string) (string, bool) {
	name = normStateName(strings.TrimSpace(name))
	for _, c := range s.Children {
		if c == name || c == s.Name+"."+name {
			return c, true
		}
	}
	return "", false
}
