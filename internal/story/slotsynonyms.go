package story

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SlotSynonym is one phrase that stands for one of an enum slot's values
// (the slot's synonyms: mapping, value → phrases).
type SlotSynonym struct {
	Value  any    // the declared value it stands for
	Phrase string // as written
	Words  []string
	Pos    Pos
}

// loadSlotSynonyms reads a slot's synonyms: a mapping from each of the
// slot's values to a list of phrases. Every key must be a declared value,
// and a phrase may stand for only one value.
func (l *loader) loadSlotSynonyms(f *file, n *yaml.Node, path string, s *Slot) {
	if len(s.Values) == 0 {
		l.errAt(f, n, path, "synonyms map an enum slot's values to phrases, and this slot declares no values: add values: [...] or remove synonyms")
		return
	}
	names := make([]string, len(s.Values))
	for i, v := range s.Values {
		names[i] = fmt.Sprint(v)
	}
	es, _ := l.entries(f, n, path)
	owner := map[string]string{} // normalised phrase → the value it stands for
	for _, e := range es {
		p := joinPath(path, e.name)
		i := slices.Index(names, e.name)
		if i < 0 {
			l.errAt(f, e.key, p, "%q is not one of the slot's values (%s)%s; synonyms are keyed by value", e.name, strings.Join(names, ", "), didYouMean(e.name, names))
			continue
		}
		items, ok := l.list(f, e.val, p)
		if !ok {
			continue
		}
		for j, it := range items {
			ip := indexPath(p, j)
			phrase, ok := l.str(f, it, ip)
			if !ok {
				continue
			}
			words := Words(phrase)
			if len(words) == 0 {
				l.errAt(f, it, ip, "synonym is empty; write a phrase such as %q", "up")
				continue
			}
			key := strings.Join(words, " ")
			if prev, dup := owner[key]; dup && prev != e.name {
				l.errAt(f, it, ip, "synonym %q stands for both %q and %q; a phrase may stand for one value only", phrase, prev, e.name)
				continue
			}
			owner[key] = e.name
			s.Synonyms = append(s.Synonyms, SlotSynonym{Value: s.Values[i], Phrase: phrase, Words: words, Pos: l.pos(f, it)})
		}
	}
}

// Canonical resolves text typed or captured for an enum slot to one of its
// declared values: the value itself, the value written with other case or
// spacing, or one of its synonyms. ok is false when nothing matches (and
// for a slot without values).
func (s *Slot) Canonical(text string) (value any, ok bool) {
	for _, v := range s.Values {
		if fmt.Sprint(v) == text {
			return v, true
		}
	}
	key := strings.Join(Words(text), " ")
	if key == "" {
		return nil, false
	}
	for _, v := range s.Values {
		if strings.Join(Words(fmt.Sprint(v)), " ") == key {
			return v, true
		}
	}
	for _, syn := range s.Synonyms {
		if strings.Join(syn.Words, " ") == key {
			return syn.Value, true
		}
	}
	return nil, false
}
