package story

import "strings"

// State paths. A state's Name is its full dotted path (bar.dark); a
// configuration inside a parallel state is a Config (config.go), printed as
// "<parallel>#<leaf>|<leaf>" with the region leaves sorted
// (clock#clock.calendar.day1|clock.weather.dry).

// State kinds (State.Kind).
const (
	KindAtomic   = "atomic"
	KindCompound = "compound"
	KindParallel = "parallel"
)

// IsCompound reports whether the state has an initial child to descend to.
func (s *State) IsCompound() bool { return s.Kind == KindCompound }

// IsParallel reports whether the state runs all its children (regions) at
// once.
func (s *State) IsParallel() bool { return s.Kind == KindParallel }

// IsWithin reports whether path is anc or lies under it.
func IsWithin(path, anc string) bool {
	return path == anc || strings.HasPrefix(path, anc+".")
}

// resolveStatePath resolves a state reference written in state from
// (dotted, or slashed; "../x" climbs from from's own path). A reference
// that is not a relative path is tried as a full path first, then against
// from's enclosing states, innermost first (so a sibling can be named
// bare). ok is false when nothing matches; norm is the full-path reading
// for the message.
func resolveStatePath(states map[string]*State, from, raw string) (path, norm string, ok bool) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "..") || strings.HasPrefix(raw, "./") {
		segs := []string{}
		if from != "" {
			segs = strings.Split(from, ".")
		}
		parts := strings.Split(raw, "/")
		for len(parts) > 0 && (parts[0] == ".." || parts[0] == ".") {
			if parts[0] == ".." && len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			parts = parts[1:]
		}
		rest := normStateName(strings.Join(parts, "/"))
		if rest != "" {
			segs = append(segs, rest)
		}
		norm = strings.Join(segs, ".")
		_, ok = states[norm]
		return norm, norm, ok
	}
	norm = normStateName(raw)
	if _, ok := states[norm]; ok {
		return norm, norm, true
	}
	for p := parentPath(from); p != ""; p = parentPath(p) {
		if _, ok := states[p+"."+norm]; ok {
			return p + "." + norm, norm, true
		}
	}
	return norm, norm, false
}

// parentPath drops the last segment of a dotted path ("" at the top).
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return ""
	}
	return p[:i]
}
