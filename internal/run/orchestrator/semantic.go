package orchestrator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kljensen/snowball/english"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Confidences of the semantic verdicts, as Kitsoki's matcher gives them.
const (
	ConfidenceSynonym         = 0.90 // a bare synonym or example inside the text
	ConfidenceTemplate        = 0.80 // a template whose captures all parsed
	ConfidenceTemplatePartial = 0.65 // a template with a capture that did not parse
)

// maxUncovered bounds the content words of the text a bare synonym may
// leave uncovered: a one-word synonym buried in a pasted paragraph is not a
// command.
const maxUncovered = 6

// builtinStopwords are dropped from the text and from bare synonyms before
// they are compared (routing.stopwords_extra adds to them). Templates keep
// their literal words in place.
var builtinStopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the this that these those it its to of in on at by for with from into onto
		and or but so then now just i i'm im me my mine we us our you your yours he she they them their
		is are am be was were been being do does did can could would will shall should may might must
		please pls let let's lets want wanna gonna like kindly maybe really very some any`) {
		builtinStopwords[w] = true
	}
}

// stopwords is the session's stopword test: the built-in list plus the
// story's routing.stopwords_extra.
func (s *Session) isStopword(w string) bool {
	return builtinStopwords[w] || slices.Contains(s.story.Routing.StopwordsExtra, w)
}

// content is words without the stopwords, in order, each as its stem:
// the bare tier and the cache signature compare stems, as Kitsoki's
// matcher does ("staged" meets the synonym "stage").
func (s *Session) content(words []string) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if !s.isStopword(w) {
			out = append(out, s.stem(w))
		}
	}
	return out
}

// stemCap bounds the session's memo of stems; past it the memo starts
// over.
const stemCap = 4096

// stem is w's Porter2 stem (the Snowball English stemmer, Kitsoki's),
// remembered for the session: a story's synonyms and examples are stemmed
// once, not on every turn. Words of one or two letters, and words with
// other characters than letters (paths, numbers, "y'all"), are their own
// stems.
func (s *Session) stem(w string) string {
	if st, ok := s.stems[w]; ok {
		return st
	}
	st := w
	if letters(w) {
		st = english.Stem(w, true)
	}
	if s.stems == nil || len(s.stems) >= stemCap {
		s.stems = make(map[string]string, 64)
	}
	s.stems[w] = st
	return st
}

// letters reports whether w is lower-case ASCII letters only.
func letters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

// Signature is the text's lexical signature: its content words, sorted
// and without repeats. Two phrasings with one signature are one cache row.
func (s *Session) Signature(text string) string {
	c := s.content(story.Words(text))
	sort.Strings(c)
	return strings.Join(slices.Compact(c), " ")
}

// bareEntry is one bare phrase of an intent: a synonym (first) or an
// example, as content words.
type bareEntry struct {
	in     *story.Intent
	source string
	words  []string
}

// bareEntries are the routable intents' bare synonyms and examples.
func (s *Session) bareEntries(intents []*story.Intent) []bareEntry {
	var out []bareEntry
	for _, in := range intents {
		for _, syn := range in.Synonyms {
			if syn.Parts == nil {
				if w := s.content(story.Words(syn.Text)); len(w) > 0 {
					out = append(out, bareEntry{in: in, source: syn.Text, words: w})
				}
			}
		}
		for _, ex := range in.Examples {
			if w := s.content(story.Words(ex)); len(w) > 0 {
				out = append(out, bareEntry{in: in, source: ex, words: w})
			}
		}
	}
	return out
}

// synonymMatch is the bare tier: a synonym or example all of whose content
// words occur in the text (leaving at most maxUncovered of the text's
// content words uncovered). One intent matching is a verdict at 0.90; two
// are a tie, unless the text's first content word belongs to one of them
// only (the verb leads). A hit that leaves a required slot unfilled, or
// leaves a slot unfilled while the text says more than the phrase, is no
// match: the router extracts slots.
func (s *Session) synonymMatch(intents []*story.Intent, text string, words []string) (Route, bool) {
	cw := s.content(words)
	if len(cw) == 0 {
		return Route{}, false
	}
	set := map[string]bool{}
	for _, w := range cw {
		set[w] = true
	}
	matched := map[string]bareEntry{}
	var order []string
	for _, e := range s.bareEntries(intents) {
		if _, ok := matched[e.in.Name]; ok || !allSet(e.words, set) || len(set)-len(uniq(e.words)) > maxUncovered {
			continue
		}
		matched[e.in.Name] = e
		order = append(order, e.in.Name)
	}
	var hit bareEntry
	switch len(order) {
	case 0:
		return Route{}, false
	case 1:
		hit = matched[order[0]]
	default:
		lead, n := cw[0], 0
		for _, name := range order {
			if slices.Contains(matched[name].words, lead) {
				hit, n = matched[name], n+1
			}
		}
		if n != 1 {
			sort.Strings(order)
			return Route{Tier: TierSynonym, Confidence: 0.5, Rejection: &Rejection{Code: CodeAmbiguousIntent, Candidates: order,
				AllowedIntents: order, Message: fmt.Sprintf("%q could mean %s; type one of them", strings.TrimSpace(text), strings.Join(order, " or "))}}, true
		}
	}
	slots := enumSlots(hit.in, words)
	if unfilledRequired(hit.in, slots) || (unfilledAny(hit.in, slots) && !sameWords(words, story.Words(hit.source))) {
		return Route{}, false
	}
	return Route{Tier: TierSynonym, Intent: hit.in.Name, Confidence: ConfidenceSynonym, Slots: slots}, true
}

func allSet(want []string, set map[string]bool) bool {
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

func uniq(ws []string) []string {
	c := slices.Clone(ws)
	sort.Strings(c)
	return slices.Compact(c)
}

func sameWords(a, b []string) bool { return slices.Equal(a, b) }

func unfilledRequired(in *story.Intent, slots map[string]any) bool {
	for _, name := range in.SlotOrder {
		if _, ok := slots[name]; !ok && in.Slots[name].Required {
			return true
		}
	}
	return false
}

func unfilledAny(in *story.Intent, slots map[string]any) bool {
	for _, name := range in.SlotOrder {
		if _, ok := slots[name]; !ok {
			return true
		}
	}
	return false
}

// templateMatch: the input, word by word, is a template: its literal
// words in place and each {slot} capturing the words up to the next
// literal (at least one). Within an intent the template filling the most
// slots wins; two intents matching are a tie. A capture an enum slot
// cannot read leaves the slot missing, at the partial confidence.
func templateMatch(intents []*story.Intent, words []string) (Route, bool) {
	type best struct {
		slots   map[string]any
		missing []string
	}
	found := map[string]best{}
	var order []string
	for _, in := range intents {
		for _, syn := range in.Synonyms {
			if syn.Parts == nil {
				continue
			}
			slots, missing, ok := matchParts(syn.Parts, words, in)
			if !ok {
				continue
			}
			cur, seen := found[in.Name]
			if !seen {
				order = append(order, in.Name)
			}
			if !seen || len(slots) > len(cur.slots) {
				found[in.Name] = best{slots, missing}
			}
		}
	}
	switch len(order) {
	case 0:
		return Route{}, false
	case 1:
	default:
		sort.Strings(order)
		return Route{Tier: TierTemplate, Confidence: 0.5, Rejection: &Rejection{Code: CodeAmbiguousIntent, Candidates: order, AllowedIntents: order,
			Message: fmt.Sprintf("%q fits %s; type one of them", strings.Join(words, " "), strings.Join(order, " or "))}}, true
	}
	b := found[order[0]]
	r := Route{Tier: TierTemplate, Intent: order[0], Confidence: ConfidenceTemplate, Slots: b.slots}
	if len(b.missing) > 0 {
		r.Confidence, r.Missing = ConfidenceTemplatePartial, b.missing
	}
	return r, true
}

func matchParts(parts []story.SynonymPart, words []string, in *story.Intent) (map[string]any, []string, bool) {
	slots := map[string]any{}
	var missing []string
	i := 0
	for pi, p := range parts {
		if p.Slot == "" {
			if i >= len(words) || words[i] != p.Word {
				return nil, nil, false
			}
			i++
			continue
		}
		end := len(words) // the last capture takes the rest
		if pi+1 < len(parts) {
			next := parts[pi+1].Word
			end = -1
			for j := i + 1; j < len(words); j++ {
				if words[j] == next {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, nil, false
			}
		}
		if end <= i {
			return nil, nil, false
		}
		sl := in.Slots[p.Slot]
		capture := strings.Join(words[i:end], " ")
		switch v, ok := sl.Parse(capture); {
		case ok: // an enum value, its synonym, or a typo of one
			slots[p.Slot] = v
		case len(sl.Values) > 0:
			missing = append(missing, p.Slot)
		default:
			slots[p.Slot] = TypedValue(slotType(sl), capture)
		}
		i = end
	}
	if i != len(words) {
		return nil, nil, false
	}
	return slots, missing, true
}

// band applies routing.semantic_high_bar and semantic_mid_bar to a
// semantic verdict: at or above the high bar it is taken; at or above the
// mid bar the user is asked to confirm it or fill its missing slots (a
// MISSING_SLOTS rejection naming them, or CLARIFY); below it is no match.
// Ties (AMBIGUOUS_INTENT) pass as they are.
func (s *Session) band(r Route) (Route, bool) {
	if r.Rejection != nil {
		return r, true
	}
	high, mid := s.story.Routing.Bars()
	switch {
	case r.Confidence >= high && len(r.Missing) == 0:
		return r, true
	case r.Confidence >= mid:
		missing := r.Missing
		if def := s.intentDef(r.Intent); def != nil {
			for _, name := range def.SlotOrder {
				if _, ok := r.Slots[name]; !ok && def.Slots[name].Required && !slices.Contains(missing, name) {
					missing = append(missing, name)
				}
			}
		}
		rej := &Rejection{Code: CodeClarify, Candidates: []string{r.Intent}, MissingSlots: missing,
			Message: fmt.Sprintf("did you mean %s (confidence %.2f)? type it to confirm", r.Intent, r.Confidence)}
		if len(missing) > 0 {
			rej.Code = CodeMissingSlots
			rej.Message = fmt.Sprintf("%s needs %s; type it with the slot filled (e.g. %s %s=…)", r.Intent, strings.Join(missing, ", "), r.Intent, missing[0])
		}
		r.Rejection, r.Intent = rej, ""
		return r, true
	}
	return Route{}, false
}

// CodeClarify is the rejection of a semantic verdict between the mid and
// the high bar that fills every slot: the user is asked to confirm it.
const CodeClarify = "CLARIFY"
