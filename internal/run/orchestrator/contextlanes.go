package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// The contextual tier's lanes (contextual_routing help_chat, meta_chat):
// free text the plan guard does not take is classified by the router agent
// into one of the room's classes, as Kitsoki's contextual router does:
//
//   - intent: an intent of the room, with the slots the text fills;
//   - help: a question about the story or the room, which opens the
//     help_chat meta mode with the text as its first message;
//   - meta_edit: a request to change the story, which opens meta_chat;
//   - room_request: room work, which goes to room_chat.
//
// Only the intent and room_request classes move the story; the lanes keep
// state and world as they are.

// Contextual classes.
const (
	ClassIntent      = "intent"
	ClassHelp        = "help"
	ClassMetaEdit    = "meta_edit"
	ClassRoomRequest = "room_request"
)

// reasonClassify marks a contextual route that waits for the classifier.
const reasonClassify = "classify"

// lanesOf is the classes a room's contextual tier offers besides intent.
func lanesOf(c *story.ContextualRouting) []string {
	var out []string
	if c.HelpChat != "" {
		out = append(out, ClassHelp)
	}
	if c.MetaChat != "" {
		out = append(out, ClassMetaEdit)
	}
	if c.RoomChat != "" {
		out = append(out, ClassRoomRequest)
	}
	return out
}

// classifySchema is the schema of the classifier's answer: an intent of
// the room (as the router answers), or one of the lanes.
func (s *Session) classifySchema(c *story.ContextualRouting) ([]byte, error) {
	raw, err := s.RouterSchema()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	branches, _ := doc["anyOf"].([]any)
	conf := map[string]any{"type": "number", "minimum": 0, "maximum": 1}
	branches = append(branches, map[string]any{
		"type": "object", "required": []string{"class", "confidence"}, "additionalProperties": false,
		"properties": map[string]any{
			"class":      map[string]any{"enum": lanesOf(c)},
			"confidence": conf,
			"reason":     map[string]any{"type": "string"},
		},
	})
	doc["anyOf"] = branches
	return json.Marshal(doc)
}

// classifyPrompt is the router's prompt with the room's lanes added.
func (s *Session) classifyPrompt(c *story.ContextualRouting, text string) string {
	var b strings.Builder
	b.WriteString(s.RouterPrompt(text))
	b.WriteString("\nOr, when the text is not one of those intents, answer with a class instead of an intent:\n")
	for _, class := range lanesOf(c) {
		switch class {
		case ClassHelp:
			b.WriteString("- class help: a question about how to use the story, this room or kitsoki\n")
		case ClassMetaEdit:
			b.WriteString("- class meta_edit: a request to change the story, its rooms, prompts or routing\n")
		case ClassRoomRequest:
			b.WriteString("- class room_request: work the user wants done in this room\n")
		}
	}
	b.WriteString("with your confidence and a short reason.\n")
	return b.String()
}

// classify asks the router agent which class (or intent) free text is.
func (s *Session) classify(ctx context.Context, t *turnCtx, st *story.State, text string) Route {
	c := st.Contextual
	raw, err := s.classifySchema(c)
	if err != nil {
		return Route{Tier: TierContextual, Err: fmt.Errorf("contextual schema: %w", err)}
	}
	sch, err := schema.CompileDocument("contextual schema of state "+s.state, raw)
	if err != nil {
		return Route{Tier: TierContextual, Err: fmt.Errorf("contextual schema: %w", err)}
	}
	alias := s.RouterAlias()
	inv := &story.Invoke{Name: host.AgentNamespace + "decide"}
	if alias != DefaultRouter {
		inv.Agent = alias
	}
	world := s.lendWorld()
	res, err := s.host.Dispatch(ctx, &host.Call{Namespace: inv.Name, Args: map[string]any{"prompt": s.classifyPrompt(c, text), "call": PurposeRoute},
		Invoke: inv, SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world, Schema: sch, Purpose: PurposeRoute,
		Run: host.RunEnv{Live: s.liveFor(world), TitleOwned: s.TitleOwned()}})
	switch {
	case err != nil:
		return Route{Tier: TierContextual, Err: err}
	case res == nil:
		return Route{Tier: TierContextual, Err: fmt.Errorf("the router agent %s gave no answer", alias)}
	case res.Err != nil:
		return Route{Tier: TierContextual, Err: res.Err}
	}
	sub, _ := res.Data["submitted"].(map[string]any)
	r := Route{Tier: TierContextual, Slots: map[string]any{}}
	r.Confidence, _ = number.Float(sub["confidence"])
	r.Reason, _ = sub["class"].(string)
	switch r.Reason {
	case ClassHelp:
		r.Lane = c.HelpChat
	case ClassMetaEdit:
		r.Lane = c.MetaChat
	case ClassRoomRequest:
		r.Intent, r.Slots = c.RoomChat, map[string]any{c.RoomSlot: strings.TrimSpace(text)}
	default:
		r.Reason = ClassIntent
		r.Intent, _ = sub["intent"].(string)
		if m, ok := sub["slots"].(map[string]any); ok {
			for k, v := range m {
				r.Slots[k] = normalizeNumber(v)
			}
		}
	}
	return r
}
