package tui

import "strings"

// transcript is what the session printed, entry by entry, as it was
// printed: it is wrapped when drawn, at the width of the frame, so a
// resize re-wraps all of it.
type transcript struct {
	entries []string
	// earlier are the entries cleared away (a transient room was
	// entered): off the screen, but printed when the UI ends.
	earlier []string
	// cache: the wrapped lines of entries at width cacheW.
	cache  []string
	cacheN int // entries wrapped into cache
	cacheW int
}

// add appends an entry (several lines at once when it holds newlines).
func (t *transcript) add(text string) { t.entries = append(t.entries, text) }

// lines is the whole transcript wrapped to width; wrapping is done once
// per entry and width.
func (t *transcript) lines(width int) []string {
	if width != t.cacheW {
		t.cache, t.cacheN, t.cacheW = nil, 0, width
	}
	for ; t.cacheN < len(t.entries); t.cacheN++ {
		t.cache = append(t.cache, wrap(t.entries[t.cacheN], width)...)
	}
	return t.cache
}

// window is the rows lines of the transcript that end *scroll lines
// before its end; *scroll is clamped to what there is.
func (t *transcript) window(width, rows int, scroll *int) []string {
	all := t.lines(width)
	*scroll = min(max(*scroll, 0), max(len(all)-rows, 0))
	end := len(all) - *scroll
	return all[max(end-rows, 0):end]
}

// clear starts the screen's transcript anew; what it held is kept for
// the normal screen.
func (t *transcript) clear() {
	t.earlier = append(t.earlier, t.entries...)
	t.entries = nil
	t.cache, t.cacheN = nil, 0
}

// text is the whole transcript, the cleared entries too, wrapped to
// width, one string, for the normal screen when the UI ends.
func (t *transcript) text(width int) string {
	var all []string
	for _, e := range t.earlier {
		all = append(all, wrap(e, width)...)
	}
	return strings.Join(append(all, t.lines(width)...), "\n")
}
