package orchestrator

import (
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// TierVerbValue is the tier that reads "verb value": a verb of an intent
// followed by a value of its one slot ("go west", "greet Ada", "south").
const TierVerbValue = "verb_value"

// verbValueMatch is the verb-value tier, which needs no model and runs
// whether or not the semantic tiers are on. An intent's verbs are its
// name, its title, the first word of each of its examples of two words or
// more and its bare synonyms; its value slot is its one required slot (or
// its one slot). The text must be a verb followed by words that read as a
// value of that slot: one of an enum slot's values or synonyms (as a
// template capture reads them), or, for a slot of another type, the rest
// of the text as typed — then only after the intent's name or title, and
// only for an intent with no synonym templates (they read its text). A
// lone enum value is the value with no verb. Two intents reading the text
// is no match.
// Enum readings run before the semantic tiers and text readings after them,
// so a template's capture wins over a verb-value reading of the same text.
func (s *Session) verbValueMatch(intents []*story.Intent, text string, enums bool) (Route, bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return Route{}, false
	}
	var hit *Route
	for _, in := range intents {
		slot := valueSlot(in)
		if slot == "" || (len(in.Slots[slot].Values) > 0) != enums || (!enums && hasTemplate(in)) {
			continue
		}
		r, ok := readVerbValue(in, slot, fields)
		if !ok {
			continue
		}
		if hit != nil {
			return Route{}, false
		}
		hit = &r
	}
	if hit == nil {
		return Route{}, false
	}
	return *hit, true
}

// hasTemplate reports whether the intent has a synonym template: then its
// templates, not the verb-value tier, read its text slots.
func hasTemplate(in *story.Intent) bool {
	for _, syn := range in.Synonyms {
		if syn.Parts != nil {
			return true
		}
	}
	return false
}

// valueSlot is the slot a verb-value reading fills: the intent's one
// required slot, else its one slot.
func valueSlot(in *story.Intent) string {
	var req []string
	for _, n := range in.SlotOrder {
		if in.Slots[n].Required {
			req = append(req, n)
		}
	}
	switch {
	case len(req) == 1:
		return req[0]
	case len(req) == 0 && len(in.SlotOrder) == 1:
		return in.SlotOrder[0]
	}
	return ""
}

// readVerbValue reads fields as a verb of in and a value of slot.
func readVerbValue(in *story.Intent, slot string, fields []string) (Route, bool) {
	sl := in.Slots[slot]
	enum := len(sl.Values) > 0
	for _, v := range verbsOf(in, enum) {
		n := verbPrefix(v, fields)
		if n < 0 || n == len(fields) {
			continue
		}
		rest := strings.Join(fields[n:], " ")
		if val, ok := readValue(sl, rest); ok {
			return Route{Tier: TierVerbValue, Intent: in.Name, Confidence: 1, Slots: map[string]any{slot: val}}, true
		}
	}
	if enum {
		if val, ok := sl.Canonical(strings.Join(fields, " ")); ok {
			return Route{Tier: TierVerbValue, Intent: in.Name, Confidence: 1, Slots: map[string]any{slot: val}}, true
		}
	}
	return Route{}, false
}

// readValue reads the words after the verb as a value of sl.
func readValue(sl *story.Slot, rest string) (any, bool) {
	if len(sl.Values) > 0 {
		return sl.Parse(rest)
	}
	v := TypedValue(slotType(sl), rest)
	switch sl.Type {
	case "int", "float", "bool":
		if _, isText := v.(string); isText {
			return nil, false
		}
	}
	return v, true
}

// verbsOf lists the intent's verb phrases, as words. The example and
// synonym verbs are used only for enum slots, whose values are checked;
// any text reads as a string, so for those only the name and title lead.
func verbsOf(in *story.Intent, enum bool) [][]string {
	var out [][]string
	add := func(ws []string) {
		if len(ws) == 0 {
			return
		}
		for _, o := range out {
			if strings.Join(o, " ") == strings.Join(ws, " ") {
				return
			}
		}
		out = append(out, ws)
	}
	add(story.Words(in.Name))
	add(story.Words(strings.ReplaceAll(in.Name, "_", " ")))
	add(story.Words(in.Title))
	if !enum {
		return out
	}
	for _, ex := range in.Examples {
		if ws := story.Words(ex); len(ws) >= 2 {
			add(ws[:1])
		}
	}
	for _, syn := range in.Synonyms {
		if syn.Parts == nil {
			add(story.Words(syn.Text))
		}
	}
	return out
}

// verbPrefix is how many leading fields spell verb (-1 when they do not).
func verbPrefix(verb []string, fields []string) int {
	var got []string
	for i, f := range fields {
		got = append(got, story.Words(f)...)
		switch {
		case len(got) == len(verb) && strings.Join(got, " ") == strings.Join(verb, " "):
			return i + 1
		case len(got) >= len(verb):
			return -1
		}
	}
	return -1
}

// outOfStateMatch runs when no tier routed the text and before the router:
// the text is exactly the name, title or an example of a declared intent
// that the state does not allow. Under a "*" arm the intent is taken (the
// wildcard handles it); otherwise the text is refused as
// INTENT_NOT_ALLOWED_IN_STATE, without asking the router, which could only
// answer none.
func (s *Session) outOfStateMatch(key string) (Route, bool) {
	allowed := map[string]bool{}
	for _, n := range s.AllowedIntents() {
		allowed[n] = true
	}
	var others []*story.Intent
	for _, name := range s.knownIntents() {
		if def := s.intentDef(name); def != nil && !allowed[name] && !def.Hidden {
			others = append(others, def)
		}
	}
	r, ok := exactMatch(others, key)
	if !ok {
		return Route{}, false
	}
	if s.hasWildcard() {
		return r, true
	}
	names := s.AllowedIntents()
	r.Rejection = &Rejection{Code: CodeIntentNotAllowed, AllowedIntents: names, Candidates: []string{r.Intent},
		Message: fmt.Sprintf("%s is not available in state %q; type one of: %s", r.Intent, s.state, strings.Join(names, ", "))}
	r.Intent = ""
	return r, true
}

// hasWildcard reports whether the state (or an ancestor) has a "*" arm.
func (s *Session) hasWildcard() bool {
	for _, st := range s.scopes() {
		if _, ok := st.On["*"]; ok {
			return true
		}
	}
	return false
}

// slotsMatch is the verb-value tier's reading of a typed line said as free
// text: an intent's name (or its title) followed by key=value words
// ("greet name=Ada style=formal"). Values are typed by their slots, as a
// typed line's are, and a key the intent has no slot for is kept, so the
// turn refuses it as it refuses a typed one (UNKNOWN_SLOT, with a did you
// mean). It runs before the other tiers, so that "name=Ada" is never read
// as a name.
func slotsMatch(intents []*story.Intent, text string) (Route, bool) {
	fields, err := splitFields(text)
	if err != nil || len(fields) < 2 {
		return Route{}, false
	}
	var pairs []string
	verb := fields
	for i, f := range fields {
		if strings.Contains(f, "=") {
			verb, pairs = fields[:i], fields[i:]
			break
		}
	}
	if len(pairs) == 0 || len(verb) == 0 {
		return Route{}, false
	}
	for _, in := range intents {
		if !namesIntent(in, verb) {
			continue
		}
		slots := map[string]any{}
		for _, p := range pairs {
			k, v, _ := strings.Cut(p, "=")
			slots[k] = TypedValue(slotType(in.Slots[k]), v)
		}
		return Route{Tier: TierVerbValue, Intent: in.Name, Confidence: 1, Slots: slots}, true
	}
	return Route{}, false
}

// namesIntent reports whether the words spell the intent's name (with "_"
// as a space, or as written) or its title.
func namesIntent(in *story.Intent, words []string) bool {
	var got []string
	for _, w := range words {
		got = append(got, story.Words(w)...)
	}
	said := strings.Join(got, " ")
	for _, v := range []string{in.Name, strings.ReplaceAll(in.Name, "_", " "), in.Title} {
		if v != "" && strings.Join(story.Words(v), " ") == said {
			return true
		}
	}
	return false
}
