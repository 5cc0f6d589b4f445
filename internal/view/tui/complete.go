package tui

import (
	"slices"
	"strings"
)

// complete completes the word before the end of the input: a `:` command,
// an intent name, a slot key ("key=") of the line's intent, or an enum
// value after "key=". One candidate is filled in; several are extended to
// their common prefix and listed under the input.
func (m *Model) complete() {
	v := m.input.Value()
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
			m.hint = "no completion: " + strings.Fields(head)[0] + " is not an intent of this state"
			return
		}
		if k, _, ok := strings.Cut(word, "="); ok {
			sl := slotOf(in, k)
			if sl == nil || len(sl.Values) == 0 {
				m.hint = "no completion for the value of " + k
				return
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
		m.hint = "no completion for " + strings.TrimSpace(v)
		if v == "" {
			m.hint = "nothing to complete"
		}
		return
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
		m.input.SetValue(head + fill + suffix)
		m.hint = ""
	default:
		m.input.SetValue(head + commonPrefix(hits))
		m.hint = strings.Join(hits, "  ")
	}
	m.input.CursorEnd()
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
