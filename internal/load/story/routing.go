package story

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// FreeFormFallback names the story's work-intake room: the state and the
// intent (one required string slot) whose arms the loader copies onto the
// states with no free-text sink of their own (freeform.go).
type FreeFormFallback struct {
	State  string
	Intent string
	Pos    Pos // where the entry is (zero when auto-detected)
}

// Synonym is one synonyms: entry of an intent: a bare phrase, or a
// template whose {slot} captures fill slots.
type Synonym struct {
	Text string
	// Parts is the template, word by word; nil for a bare phrase.
	Parts []SynonymPart
	Pos   Pos
}

// SynonymPart is a literal word of a template, or a {slot} capture.
type SynonymPart struct {
	Word string // lower-cased literal word ("" for a capture)
	Slot string // the slot a capture fills ("" for a word)
}

// loadSynonyms reads an intent's synonyms: list. A {slot} must name a slot
// of the intent and two captures need a word between them; slots are read
// after synonyms, so the check runs in checkSynonyms.
func (l *loader) loadSynonyms(f *file, n *yaml.Node, path string, in *Intent) {
	items, ok := l.list(f, n, path)
	if !ok {
		return
	}
	for i, it := range items {
		p := indexPath(path, i)
		s, ok := l.str(f, it, p)
		if !ok {
			continue
		}
		syn := Synonym{Text: s, Pos: l.pos(f, it)}
		parts, err := parseSynonym(s)
		if err != nil {
			l.errAt(f, it, p, "synonym %q: %v", s, err)
			continue
		}
		if len(parts) == 0 {
			l.errAt(f, it, p, "synonym is empty; write a phrase such as \"head out\" or a template such as \"go {direction}\"")
			continue
		}
		for _, pt := range parts {
			if pt.Slot != "" {
				syn.Parts = parts
				break
			}
		}
		in.Synonyms = append(in.Synonyms, syn)
		l.synonymRefs = append(l.synonymRefs, &synonymRef{f: f, n: it, path: p, in: in, parts: parts})
	}
}

type synonymRef struct {
	f     *file
	n     *yaml.Node
	path  string
	in    *Intent
	parts []SynonymPart
}

// parseSynonym splits a synonym into words and {slot} captures.
func parseSynonym(s string) ([]SynonymPart, error) {
	var out []SynonymPart
	for _, w := range strings.Fields(s) {
		for w != "" {
			open := strings.IndexByte(w, '{')
			if open < 0 {
				if strings.ContainsRune(w, '}') {
					return nil, fmt.Errorf("unmatched \"}\"; a capture is written {slot_name}")
				}
				out = appendWords(out, w)
				break
			}
			if open > 0 {
				out = appendWords(out, w[:open])
			}
			end := strings.IndexByte(w[open:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unterminated \"{\"; a capture is written {slot_name}")
			}
			name := w[open+1 : open+end]
			if name == "" {
				return nil, fmt.Errorf("empty capture \"{}\"; write {slot_name}")
			}
			if len(out) > 0 && out[len(out)-1].Slot != "" {
				return nil, fmt.Errorf("captures {%s} and {%s} are adjacent; put a word between them", out[len(out)-1].Slot, name)
			}
			out = append(out, SynonymPart{Slot: name})
			w = w[open+end+1:]
		}
	}
	return out, nil
}

// appendWords appends the normalized words of a literal run.
func appendWords(out []SynonymPart, s string) []SynonymPart {
	for _, w := range Words(s) {
		out = append(out, SynonymPart{Word: w})
	}
	return out
}

// Words splits text into lower-cased words: runs of letters, digits, '_',
// '-', '.', '/' and '\”; everything else separates. The router's exact
// and synonym tiers compare text through it.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == '/', r == '\'':
			return false
		case r > 127:
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}
		return true
	})
}

// checkSynonyms checks that each template capture names a slot of its
// intent.
func (l *loader) checkSynonyms() {
	for _, r := range l.synonymRefs {
		for _, pt := range r.parts {
			if pt.Slot == "" || r.in.Slots[pt.Slot] != nil {
				continue
			}
			declared := slices.Sorted(maps.Keys(r.in.Slots))
			hint := "; it declares no slots"
			if len(declared) > 0 {
				hint = "; declared slots: " + strings.Join(declared, ", ")
			}
			l.errAt(r.f, r.n, r.path, "synonym captures {%s}, which is not a slot of intent %q%s%s",
				pt.Slot, r.in.Name, didYouMean(pt.Slot, declared), hint)
		}
	}
}

// checkDefaultIntents checks each state's default_intent: the state (or an
// ancestor) has arms for it, and the intent declares exactly one required
// string slot, which receives the whole utterance.
func (l *loader) checkDefaultIntents() {
	for _, r := range l.defaultIntents {
		s, name := r.state, r.value
		if !l.hasOwnArms(s, name) {
			l.errAt(r.f, r.n, r.path, "default_intent %q has no on: arms in state %q or its ancestors; add on.%s, or name an intent the state handles", name, s.Name, name)
			continue
		}
		def := l.intentFor(s, name)
		if def == nil {
			l.errAt(r.f, r.n, r.path, "default_intent %q is not declared in intents:; declare it with one required string slot (e.g. message) for the utterance", name)
			continue
		}
		slot, err := DefaultSlot(def)
		if err != nil {
			l.errAt(r.f, r.n, r.path, "default_intent %q: %v", name, err)
			continue
		}
		s.DefaultSlot = slot
	}
}

// DefaultSlot is the slot a default_intent fills with the utterance: its
// one required slot, which must be a string (or text).
func DefaultSlot(def *Intent) (string, error) {
	var req []string
	for _, n := range def.SlotOrder {
		if def.Slots[n].Required {
			req = append(req, n)
		}
	}
	if len(req) != 1 {
		return "", fmt.Errorf("must declare exactly one required string slot to receive the utterance, it declares %d (%s)", len(req), strings.Join(req, ", "))
	}
	if t := def.Slots[req[0]].Type; t != "string" && t != "text" {
		return "", fmt.Errorf("its required slot %q is %q; the utterance needs type: string", req[0], t)
	}
	return req[0], nil
}

// hasOwnArms is hasArms without the "*" catch-all.
func (l *loader) hasOwnArms(s *State, intent string) bool {
	for s != nil {
		if _, ok := s.On[intent]; ok {
			return true
		}
		if s.Parent == "" {
			return false
		}
		s = l.st.States[s.Parent]
	}
	return false
}

// intentFor is the definition of intent seen from s: a state-local one
// shadows the global one.
func (l *loader) intentFor(s *State, name string) *Intent {
	for st := s; st != nil; {
		if in := st.Intents[name]; in != nil {
			return in
		}
		if st.Parent == "" {
			break
		}
		st = l.st.States[st.Parent]
	}
	return l.st.Intents[name]
}
