package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const offRampStory = `
app: {id: desk}
routing: {agent: agent.router}
agent_plugins: {agent.router: {plugin: builtin.inprocess}}
agents:
  guide: {system_prompt: "You answer questions about the desk."}
world:
  n: {type: int, default: 0}
intents:
  go: {}
root: desk
states:
  desk:
    view: "the desk"
    agent_off_ramp: {agent: guide, banner: "(thinking)"}
    on:
      go: [{target: desk, effects: [{increment: {n: 1}}]}]
`

// Free text the router cannot place is answered by the off-ramp's agent;
// the state and the world stay as they were.
func TestAgentOffRamp(t *testing.T) {
	var asked *agent.Call
	conv := scripted(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
		asked = c
		return &agent.AskResponse{Submission: json.RawMessage(`{"answer":"It is a desk."}`)}, nil
	})
	r := newRig(t, files{"app.yaml": offRampStory},
		withAgent("agent.router", &routerAgent{sub: `{"intent":"none","confidence":0.1}`}),
		withHostOpts(host.WithBuiltin(conv)))
	out, err := r.sess.Say(context.Background(), "what is this place")
	if err != nil {
		t.Fatal(err)
	}
	if !out.OffRamp || out.Outcome != OutcomeTransitioned || out.State != "desk" || out.Rejection != nil {
		t.Fatalf("outcome %+v", out)
	}
	if diff := cmp.Diff([]string{"(thinking)", "It is a desk."}, out.Says); diff != "" {
		t.Errorf("says (-want +got):\n%s", diff)
	}
	if asked == nil || asked.Persona == nil || asked.Persona.SystemPrompt != "You answer questions about the desk." ||
		!strings.Contains(asked.Request.Prompt, "what is this place") {
		t.Errorf("converse call = %+v", asked)
	}
	if fmt.Sprint(r.sess.World()["n"]) != "0" {
		t.Errorf("world written: n = %v", r.sess.World()["n"])
	}
	if diff := cmp.Diff([]string{"turn.input", "turn.start", "agent.call.start", "agent.call.complete", "turn.routed", "harness.called", "harness.dispatched",
		"agent.call.start", "agent.call.complete", "harness.returned", "machine.say", "machine.say", "turn.end"}, r.kinds(1)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

// Without an off-ramp, the same text is rejected as before.
func TestNoOffRampRejects(t *testing.T) {
	src := strings.Replace(offRampStory, `    agent_off_ramp: {agent: guide, banner: "(thinking)"}`+"\n", "", 1)
	r := newRig(t, files{"app.yaml": src}, withAgent("agent.router", &routerAgent{sub: `{"intent":"none","confidence":0.1}`}))
	out, err := r.sess.Say(context.Background(), "what is this place")
	if err != nil {
		t.Fatal(err)
	}
	if out.OffRamp || out.Rejection == nil || out.Rejection.Code != CodeNoMatch {
		t.Fatalf("outcome %+v", out)
	}
}
