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

// Parse resolves free text captured for an enum slot (a template capture)
// the way Kitsoki's enum parser does, in tiers: Canonical; then word-bag
// containment (the text holds every word of a value or of a synonym, and
// all such stand for one value: "the rich guy" → banker when "rich guy" is
// a synonym of banker); then a typo (a Damerau-Levenshtein distance of
// one, for texts and phrases of at least 4 letters, standing for one
// value: "bankr" → banker). ok is false when no tier resolves it.
func (s *Slot) Parse(text string) (value any, ok bool) {
	if v, ok := s.Canonical(text); ok {
		return v, true
	}
	words := Words(text)
	if len(words) == 0 || len(s.Values) == 0 {
		return nil, false
	}
	type phrase struct {
		value any
		words []string
	}
	var phrases []phrase
	for _, v := range s.Values {
		phrases = append(phrases, phrase{v, Words(fmt.Sprint(v))})
	}
	for _, syn := range s.Synonyms {
		phrases = append(phrases, phrase{syn.Value, syn.Words})
	}
	unique := func(match func(phrase) bool) (any, bool) {
		var found any
		n := 0
		for _, p := range phrases {
			if match(p) && (n == 0 || fmt.Sprint(found) != fmt.Sprint(p.value)) {
				found = p.value
				n++
			}
		}
		return found, n == 1
	}
	if v, ok := unique(func(p phrase) bool { return len(p.words) > 0 && allIn(p.words, words) }); ok {
		return v, true
	}
	key := strings.Join(words, " ")
	return unique(func(p phrase) bool {
		w := strings.Join(p.words, " ")
		return len([]rune(key)) >= 4 && len([]rune(w)) >= 4 && oneEdit(key, w)
	})
}

func allIn(want, words []string) bool {
	for _, w := range want {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return true
}

// oneEdit reports whether a and b differ by at most one insertion,
// deletion, substitution or transposition of adjacent letters.
func oneEdit(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	if len(ra) < len(rb) {
		ra, rb = rb, ra
	}
	switch len(ra) - len(rb) {
	case 0:
		diff := []int{}
		for i := range ra {
			if ra[i] != rb[i] {
				diff = append(diff, i)
			}
		}
		switch len(diff) {
		case 0, 1:
			return true
		case 2:
			i, j := diff[0], diff[1]
			return j == i+1 && ra[i] == rb[j] && ra[j] == rb[i]
		}
		return false
	case 1:
		for i := range rb {
			if ra[i] != rb[i] {
				return string(ra[i+1:]) == string(rb[i:])
			}
		}
		return true
	}
	return false
}
