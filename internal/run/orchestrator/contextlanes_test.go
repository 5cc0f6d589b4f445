package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const lanesStory = `
app: {id: lanes}
world:
  task: {type: string, default: ""}
intents:
  work:
    slots: {request: {type: string, required: true}}
  leave: {description: Leave the workshop.}
root: shop
states:
  shop:
    contextual_routing:
      enabled: true
      help_chat: story.ask
      meta_chat: story.edit
      room_chat: work
    on:
      work:
        - target: .
          effects: [{set: {task: "{{ slots.request }}"}}]
      leave: [{target: out}]
  out: {terminal: true}
`

// laneAgent classifies (decide) by keywords of the text and answers the
// lanes' conversations (converse), recording the personas it spoke as.
type laneAgent struct{ spoke []string }

func (a *laneAgent) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	p := c.Request.Prompt
	if c.Request.Verb == "decide" {
		user := p[strings.LastIndex(p, "User: "):]
		class := `{"class":"room_request","confidence":0.9}`
		switch {
		case strings.Contains(user, "how do"):
			class = `{"class":"help","confidence":0.9,"reason":"a question"}`
		case strings.Contains(user, "rename"):
			class = `{"class":"meta_edit","confidence":0.8}`
		case strings.Contains(user, "go home"):
			class = `{"intent":"leave","confidence":0.95}`
		}
		return &agent.AskResponse{Submission: json.RawMessage(class)}, nil
	}
	name := ""
	if c.Persona != nil {
		name = c.Persona.Name
	}
	a.spoke = append(a.spoke, name)
	return &agent.AskResponse{Submission: json.RawMessage(`{"answer":"answered by ` + name + `"}`)}, nil
}
func (a *laneAgent) Close() error { return nil }

// In a room with help and meta lanes the router agent classifies free
// text: a help question goes to story.ask's agent and a change request to
// story.edit's (the built-in ones), the story staying where it was; room
// work goes to room_chat; an intent is taken.
func TestContextualLanes(t *testing.T) {
	a := &laneAgent{}
	r := newRig(t, files{"app.yaml": lanesStory}, withHostOpts(host.WithBuiltin(a)))
	out := say(t, r, "how do I use this workshop?")
	if out.State != "shop" || !strings.Contains(strings.Join(out.Says, " "), "answered by story-explainer") {
		t.Errorf("help: state %q says %q", out.State, out.Says)
	}
	out = say(t, r, "rename this room to the forge")
	if out.State != "shop" || !strings.Contains(strings.Join(out.Says, " "), "answered by story-author") {
		t.Errorf("meta_edit: state %q says %q", out.State, out.Says)
	}
	if r.sess.Overlay() != "" {
		t.Errorf("a lane left overlay %q open", r.sess.Overlay())
	}
	say(t, r, "sharpen the chisels")
	if got := r.sess.World()["task"]; got != "sharpen the chisels" {
		t.Errorf("room_request: task = %v", got)
	}
	if out := say(t, r, "go home now"); out.State != "out" {
		t.Errorf("intent: state %q", out.State)
	}
}
