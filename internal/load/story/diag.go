package story

import (
	"fmt"
	"sort"
	"strings"
)

// String formats the diagnostic as "file:line:col: key.path: message". The
// position is left out when unknown (line 0), the key path when empty.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// String formats the position as "file:line:col" (or just "file" when the
// line is unknown).
func (p Pos) String() string {
	if p.Line <= 0 {
		return p.File
	}
	col := p.Col
	if col <= 0 {
		col = 1
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, col)
}

// LoadError is what Load returns when a story cannot be loaded. It carries
// every error found, in every file, not just the first.
type LoadError struct {
	Diagnostics []Diagnostic
	// Warnings found along the way (not part of Error()), so a validator can
	// show them next to the errors.
	Warnings []Diagnostic
}

// Error prints one diagnostic per line.
func (e *LoadError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// sortDiagnostics orders diagnostics by file load order (files that are
// not story files, such as prompt files, come last, by name), then line and
// column, keeping the discovery order of diagnostics at the same spot.
func sortDiagnostics(ds []Diagnostic, fileOrder map[string]int) {
	rank := func(file string) int {
		if r, ok := fileOrder[file]; ok {
			return r
		}
		return len(fileOrder)
	}
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			if ra, rb := rank(a.File), rank(b.File); ra != rb {
				return ra < rb
			}
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// suggest returns the candidate closest to name, or "" when none is close
// enough to be a plausible typo. Closeness is the optimal-string-alignment
// distance (a swap of two adjacent letters counts as one edit), allowed up to
// a third of the name's length (at least 1, at most 3). A candidate whose
// last dotted segment equals name also qualifies (a state named by its short
// name).
func suggest(name string, candidates []string) string {
	if name == "" {
		return ""
	}
	limit := (len(name) + 2) / 3
	limit = max(1, min(limit, 3))
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := osaDistance(strings.ToLower(name), strings.ToLower(c))
		if i := strings.LastIndexByte(c, '.'); i >= 0 && c[i+1:] == name {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return uniquePrefix(name, candidates)
	}
	return best
}

// uniquePrefix is the one candidate that name (three letters or more)
// abbreviates, as "vid" does "video"; "" when none or several do.
func uniquePrefix(name string, candidates []string) string {
	if len(name) < 3 {
		return ""
	}
	found := ""
	for _, c := range candidates {
		if len(c) > len(name) && strings.HasPrefix(strings.ToLower(c), strings.ToLower(name)) {
			if found != "" {
				return ""
			}
			found = c
		}
	}
	return found
}

// didYouMean returns ` (did you mean "x"?)` for the closest candidate, or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// osaDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and adjacent transpositions, each
// costing one.
func osaDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n, m := len(ra), len(rb)
	// Three rolling rows: two back (for transpositions), previous, current.
	prev2 := make([]int, m+1)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := 0; j <= m; j++ {
		prev[j] = j
	}
	for i := 1; i <= n; i++ {
		cur[0] = i
		for j := 1; j <= m; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}
