package orchestrator

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Reasons the contextual tier records (Route.Reason, turn.routed reason).
const (
	ReasonPlanAffirmation = "plan_affirmation"
	ReasonPlanRefine      = "plan_refine"
	ReasonRoomRequest     = "room_request"
)

// contextualState is the state whose contextual_routing applies: the first
// of the scopes with an enabled one.
func (s *Session) contextualState() *story.State {
	for _, st := range s.scopes() {
		if st.Contextual != nil && st.Contextual.Enabled {
			return st
		}
	}
	return nil
}

// contextualRoute is the contextual tier (docs/routing.md): with a plan
// pending at the guard's world path, an affirmation goes to the accept
// intent and any other text to the refine intent; otherwise the room lane
// takes the text as room work. Each is a decision at confidence 1 that
// needs no agent, so replays route the same way.
func (s *Session) contextualRoute(text string, words []string) (Route, bool) {
	st := s.contextualState()
	if st == nil {
		return Route{}, false
	}
	c := st.Contextual
	text = strings.TrimSpace(text)
	if c.PlanPending(s.world) {
		if isAffirmation(words) {
			return Route{Tier: TierContextual, Reason: ReasonPlanAffirmation, Intent: c.AcceptIntent, Confidence: 1, Slots: map[string]any{}}, true
		}
		return Route{Tier: TierContextual, Reason: ReasonPlanRefine, Intent: c.RefineIntent, Confidence: 1,
			Slots: map[string]any{c.RefineSlot: text}}, true
	}
	if c.Lanes() {
		// help and meta requests are told from room work by the classifier
		return Route{Tier: TierContextual, Reason: reasonClassify}, true
	}
	if c.RoomChat != "" {
		return Route{Tier: TierContextual, Reason: ReasonRoomRequest, Intent: c.RoomChat, Confidence: 1,
			Slots: map[string]any{c.RoomSlot: text}}, true
	}
	return Route{}, false
}

// affirmWords may make up an affirmation; affirmCore are the ones that say
// yes (an affirmation has at least one).
var (
	affirmCore = map[string]bool{"ok": true, "okay": true, "k": true, "yes": true, "y": true, "yep": true, "yeah": true, "yup": true,
		"sure": true, "go": true, "apply": true, "accept": true, "accepted": true, "approve": true, "approved": true, "lgtm": true,
		"proceed": true, "confirm": true, "confirmed": true, "ship": true, "good": true, "fine": true, "great": true,
		"perfect": true, "alright": true, "do": true, "run": true, "execute": true}
	affirmFill = map[string]bool{"ahead": true, "it": true, "for": true, "that": true, "this": true, "the": true, "plan": true,
		"please": true, "looks": true, "sounds": true, "let's": true, "lets": true, "now": true, "then": true, "and": true,
		"to": true, "me": true, "with": true, "all": true, "right": true, "thanks": true}
)

// isAffirmation reports whether the words only say yes: "ok", "yes, go
// ahead", "apply it", "looks good to me". A word outside the vocabulary
// (a change, a no) makes the text a refinement.
func isAffirmation(words []string) bool {
	core := false
	for _, w := range words {
		w = strings.Trim(w, ".,!?;:'\"")
		switch {
		case w == "":
		case affirmCore[w]:
			core = true
		case !affirmFill[w]:
			return false
		}
	}
	return core
}
