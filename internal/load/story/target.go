package story

import (
	"fmt"
	"strings"
)

// ResolveTarget resolves a rendered target against the story the way the
// loader resolves a literal one: "." stays in from, "@exit:<name>" names a
// declared exit, anything else is a state path (dots or slashes). It returns
// the state path, whether the machine stays, and an error saying why the
// text names no state.
func (st *Story) ResolveTarget(from, rendered string) (target string, stay bool, err error) {
	raw := strings.TrimSpace(rendered)
	switch {
	case raw == "":
		return "", false, fmt.Errorf("which is empty (render a state name, or \".\" to stay)")
	case raw == ".":
		return from, true, nil
	case strings.HasPrefix(raw, "@exit:"):
		name := strings.TrimPrefix(raw, "@exit:")
		if sc := st.importScopes(from); len(sc) > 0 {
			return "", false, fmt.Errorf("which names an exit inside the import %s: an imported story's exits are mapped where it is folded, so only a literal target: \"@exit:%s\" can take one; render a state name", sc[0], name)
		}
		if st.Exits[name] == nil {
			//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
			return "", false, fmt.Errorf("which names an exit not declared in exits:")
		}
		return ExitStatePrefix + name, false, nil
	}
	norm := normStateName(raw)
	if strings.HasPrefix(norm, ExitStatePrefix) {
		return "", false, fmt.Errorf("which is not a state")
	}
	// Inside an imported story a rendered name is the imported story's
	// own: it is looked up under each enclosing import first, innermost
	// first; then as a state path from the state the arm is in (full
	// path, .., then the bare name under each enclosing state).
	path := ""
	for _, w := range st.importScopes(from) {
		if st.States[w+"."+norm] != nil {
			path = w + "." + norm
			break
		}
	}
	if path == "" {
		p, _, ok := resolveStatePath(st.States, from, raw)
		if !ok || strings.HasPrefix(p, ExitStatePrefix) {
			return "", false, fmt.Errorf("which is not a state")
		}
		path = p
	}
	if s := st.States[path]; s != nil && s.Import != nil {
		path = s.Import.Entry
	}
	return path, false, nil
}

// importScopes lists the import wrapper states enclosing the state path,
// innermost first.
func (st *Story) importScopes(path string) []string {
	var out []string
	for p := path; p != ""; {
		s := st.States[p]
		if s == nil {
			break
		}
		if s.Import != nil && p != path {
			out = append(out, p)
		}
		p = s.Parent
	}
	return out
}

// ResolveIntent maps an intent name rendered at run time in state from (an
// emit_intent template) to the story's intent: inside an imported story
// the imported story's own name (e.g. "accept") is its renamed one
// ("bf__accept"), innermost import first. Other names are returned as
// given.
func (st *Story) ResolveIntent(from, name string) string {
	for p := from; p != ""; {
		s := st.States[p]
		if s == nil {
			break
		}
		if s.Import != nil {
			if n, ok := s.Import.Intents[name]; ok {
				return n
			}
		}
		p = s.Parent
	}
	return name
}
