package story

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Routing is the routing: block: how free text is turned into an intent
// (docs/runtime.md, "Free text").
type Routing struct {
	// Enabled turns on the synonym and template tiers; nil when the story
	// does not say (the run's --semantic-routing and
	// KITSOKI_SEMANTIC_ROUTING win over it either way).
	Enabled *bool
	// Agent is the agent_plugins alias of the router agent ("" = the run's
	// --router, else agent.claude).
	Agent string
	// MinConfidence is the router answer's bar; nil = the run's
	// --min-confidence, else 0.5.
	MinConfidence *float64
	// FreeFormFallback is routing.free_form_fallback as written (nil when
	// absent; see freeform.go for the landing.work default).
	FreeFormFallback *FreeFormFallback
	Pos              Pos // where routing: is written (zero when absent)
}

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

var routingKeys = &keySpec{
	v1: []string{"enabled", "agent", "min_confidence", "embedding", "free_form_fallback"},
	refused: map[string]string{
		"semantic_high_bar":       "the synonym and template tiers have fixed confidences; set routing.min_confidence for the router agent's bar",
		"semantic_mid_bar":        "the synonym and template tiers have fixed confidences; set routing.min_confidence for the router agent's bar",
		"cache_enabled":           "kitsoki keeps no routing cache; remove the key",
		"cache_max_age":           "kitsoki keeps no routing cache; remove the key",
		"cache_cap":               "kitsoki keeps no routing cache; remove the key",
		"cache_trim_fraction":     "kitsoki keeps no routing cache; remove the key",
		"revalidate_strikes":      "kitsoki keeps no routing cache; remove the key",
		"confidence_decay":        "kitsoki keeps no routing cache; remove the key",
		"stopwords_extra":         "the synonym matcher's word list is fixed; write the phrasing as a synonym instead",
		"extract_llm_on_no_match": "slots come from the router agent's answer; there is no separate extraction call",
	},
}

// embeddingKeys are the keys of routing.embedding (Kitsoki's opt-in
// embedding tier, which kitsoki does not run: only enabled: false loads).
var embeddingKeys = &keySpec{v1: []string{"enabled", "model", "dim", "endpoint", "confident_bar", "margin"}}

// loadEmbedding checks routing.embedding: Kitsoki's embedding tier is off
// unless enabled: true, and kitsoki has no such tier, so a disabled block
// (the default) loads as the no-op it is in Kitsoki and enabled: true is
// refused.
func (l *loader) loadEmbedding(f *file, n *yaml.Node) {
	const path = "routing.embedding"
	fs, ok := l.fields(f, n, path, embeddingKeys)
	if !ok {
		return
	}
	var on bool
	boolField(l, f, fs, path, "enabled", &on)
	if on {
		l.errAt(f, fs.at("enabled").val, joinPath(path, "enabled"),
			"kitsoki has no embedding routing tier: set enabled: false (or remove routing.embedding); synonyms: and the router agent cover paraphrase")
	}
	for _, k := range []string{"model", "endpoint"} {
		var s string
		strField(l, f, fs, path, k, &s)
	}
	if d, ok := fs.get("dim"); ok {
		if n, ok := l.integer(f, d.val, joinPath(path, "dim")); ok && n <= 0 {
			l.errAt(f, d.val, joinPath(path, "dim"), "dim must be a positive whole number, got %d", n)
		}
	}
	for _, k := range []string{"confident_bar", "margin"} {
		if v, ok := fs.get(k); ok {
			x, _ := l.value(f, v.val, joinPath(path, k))
			switch x.(type) {
			case int, int64, float64:
			default:
				l.errAt(f, v.val, joinPath(path, k), "%s must be a number from 0 to 1, got %s", k, kindName(deref(v.val)))
			}
		}
	}
}

// loadRouting reads the top-level routing: block.
func (l *loader) loadRouting(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	r := &l.st.Routing
	r.Pos = l.pos(f, e.key)
	fs, ok := l.fields(f, e.val, "routing", routingKeys)
	if !ok {
		return
	}
	if v, ok := fs.get("enabled"); ok {
		if b, ok := l.boolean(f, v.val, "routing.enabled"); ok {
			r.Enabled = &b
		}
	}
	if v, ok := fs.get("agent"); ok {
		if s, ok := l.str(f, v.val, "routing.agent"); ok {
			if s == "" {
				l.errAt(f, v.val, "routing.agent", "routing.agent is empty; name an agent_plugins alias (e.g. agent.claude)")
			}
			r.Agent = s
			l.routingAgent = &nodeRef{f: f, n: v.val, path: "routing.agent", value: s}
		}
	}
	if v, ok := fs.get("embedding"); ok {
		l.loadEmbedding(f, v.val)
	}
	if v, ok := fs.get("free_form_fallback"); ok {
		l.loadFallback(f, v.val)
	}
	if v, ok := fs.get("min_confidence"); ok {
		x, _ := l.value(f, v.val, "routing.min_confidence")
		var c float64
		switch n := x.(type) {
		case int:
			c = float64(n)
		case int64:
			c = float64(n)
		case float64:
			c = n
		default:
			l.errAt(f, v.val, "routing.min_confidence", "routing.min_confidence must be a number from 0 to 1, got %s", kindName(deref(v.val)))
			return
		}
		if c < 0 || c > 1 {
			l.errAt(f, v.val, "routing.min_confidence", "routing.min_confidence must be from 0 to 1, got %v", c)
			return
		}
		r.MinConfidence = &c
	}
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

// checkRoutingAgent checks routing.agent names a declared agent plugin.
func (l *loader) checkRoutingAgent() {
	r := l.routingAgent
	if r == nil || r.value == "" {
		return
	}
	if _, ok := l.st.Plugins[r.value]; ok {
		return
	}
	names := slices.Sorted(maps.Keys(l.st.Plugins))
	l.errAt(r.f, r.n, r.path, "routing.agent %q is not declared in agent_plugins%s (declared: %s)", r.value, didYouMean(r.value, names), strings.Join(names, ", "))
}
