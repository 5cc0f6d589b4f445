package tui

import (
	"slices"
	"strings"
)

// tab is the Tab key: it takes the ghost suggestion (see ghost), keeping
// the completion's hint (the candidates); with no ghost it shows why
// there is nothing to complete.
func (m *Model) tab() {
	v := m.input.Value()
	_, hint := m.completeLine(v)
	if g := m.ghost(v); g != "" {
		m.input.SetValue(g)
		m.input.CursorEnd()
		m.hint = ""
		if strings.Contains(hint, "  ") {
			m.hint = hint
		}
		m.refreshGhost()
		return
	}
	m.hint = hint
}

// ghost is the line Tab makes of v, "" for none: the completion (the one
// candidate, or the candidates' common prefix); else, when the candidates
// are slot keys, the first required slot not given; else the newest line
// of the history that begins with v.
func (m *Model) ghost(v string) string {
	if v == "" {
		return ""
	}
	if c, _ := m.completeLine(v); c != v && strings.HasPrefix(c, v) {
		return c
	}
	if s := m.requiredSlot(v); s != "" {
		return v + s + "="
	}
	for i := len(m.hist.lines) - 1; i >= 0; i-- {
		if l := m.hist.lines[i]; len(l) > len(v) && strings.HasPrefix(l, v) {
			return l
		}
	}
	return ""
}

// requiredSlot is the first required slot of the line's intent that the
// line does not give, when the line ends where a slot key starts.
func (m *Model) requiredSlot(v string) string {
	fields := strings.Fields(v)
	if !strings.HasSuffix(v, " ") || len(fields) == 0 {
		return ""
	}
	in := m.intent(fields[0])
	if in == nil {
		return ""
	}
	given := map[string]bool{}
	for _, f := range fields[1:] {
		k, _, _ := strings.Cut(f, "=")
		given[k] = true
	}
	for _, sl := range in.Slots {
		if sl.Required && !given[sl.Name] {
			return sl.Name
		}
	}
	return ""
}

// refreshGhost sets the faint suggestion after the cursor: what Tab
// makes of the line (ghost), then the other history lines that begin
// with it.
func (m *Model) refreshGhost() {
	v := m.input.Value()
	var sugg []string
	if v != "" {
		if g := m.ghost(v); g != "" {
			sugg = append(sugg, g)
		}
		for i := len(m.hist.lines) - 1; i >= 0; i-- {
			if l := m.hist.lines[i]; len(l) > len(v) && strings.HasPrefix(l, v) && !slices.Contains(sugg, l) {
				sugg = append(sugg, l)
			}
		}
	}
	m.input.SetSuggestions(sugg)
}

// completeLine is the line v completed, and the hint to show: candidates,
// or why there is no completion. It completes the word at the end: a `:`
// command, an intent name, a slot key ("key=") of the line's intent, or an
// enum value after "key="; several candidates are extended to their
// common prefix.
func (m *Model) completeLine(v string) (string, string) {
	head, word := "", v
	if i := strings.LastIndexByte(v, ' '); i >= 0 {
		head, word = v[:i+1], v[i+1:]
	}
	var cands []string
	suffix := " "
	switch {
	case head == "" && strings.HasPrefix(word, ":"):
		cands = m.commands()
	case head == "":
		for _, in := range m.status.Intents {
			cands = append(cands, in.Name)
		}
	default:
		in := m.intent(strings.Fields(head)[0])
		if in == nil {
			return v, "no completion: " + strings.Fields(head)[0] + " is not an intent of this state"
		}
		if k, _, ok := strings.Cut(word, "="); ok {
			sl := slotOf(in, k)
			if sl == nil || len(sl.Values) == 0 {
				return v, "no completion for the value of " + k
			}
			for _, val := range sl.Values {
				cands = append(cands, k+"="+val)
			}
			break
		}
		given := map[string]bool{}
		for _, f := range strings.Fields(head)[1:] {
			k, _, _ := strings.Cut(f, "=")
			given[k] = true
		}
		for _, sl := range in.Slots {
			if !given[sl.Name] {
				cands = append(cands, sl.Name+"=")
			}
		}
	}
	var hits []string
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			hits = append(hits, c)
		}
	}
	switch len(hits) {
	case 0:
		if v == "" {
			return v, "nothing to complete"
		}
		return v, "no completion for " + strings.TrimSpace(v)
	case 1:
		fill := hits[0]
		switch {
		case strings.HasPrefix(fill, ":"), strings.HasSuffix(fill, "="): // a command, a slot key
			suffix = ""
		case strings.Contains(fill, "="): // an enum value: the next slot follows
			suffix = " "
		case head == "": // an intent: a space when it takes slots
			if in := m.intent(fill); in == nil || len(in.Slots) == 0 {
				suffix = ""
			}
		}
		return head + fill + suffix, ""
	}
	return head + commonPrefix(hits), strings.Join(hits, "  ")
}

func (m *Model) intent(name string) *Intent {
	i := slices.IndexFunc(m.status.Intents, func(in Intent) bool { return in.Name == name })
	if i < 0 {
		return nil
	}
	return &m.status.Intents[i]
}

func slotOf(in *Intent, name string) *Slot {
	i := slices.IndexFunc(in.Slots, func(s Slot) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &in.Slots[i]
}

func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
