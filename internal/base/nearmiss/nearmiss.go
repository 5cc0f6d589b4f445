// Package nearmiss finds what a user most likely meant by a name kitsoki
// does not know: the Levenshtein distance over runes, and the closest of
// a list of candidates within a bound. The story loader's own
// did-you-mean (internal/load/story, which also counts swapped letters and
// short state names) is stricter and stays its own.
package nearmiss

// Distance is the Levenshtein distance between a and b, counted in runes:
// the fewest insertions, deletions and substitutions turning a into b.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest is the candidate nearest to word when its distance is at most
// maxDist; of equally near ones the first in cands wins. "" when none is
// that near.
func Closest(word string, cands []string, maxDist int) string {
	best, bestD := "", maxDist+1
	for _, c := range cands {
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
