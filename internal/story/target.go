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
		if st.Exits[name] == nil {
			return "", false, fmt.Errorf("which names an exit not declared in exits:")
		}
		return ExitStatePrefix + name, false, nil
	}
	path, _, ok := resolveStatePath(st.States, from, raw)
	if !ok || strings.HasPrefix(path, ExitStatePrefix) {
		return "", false, fmt.Errorf("which is not a state")
	}
	return path, false, nil
}
