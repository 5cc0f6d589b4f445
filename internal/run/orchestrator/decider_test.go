package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const deciderStory = `
app: {id: decided}
agents:
  judge: {system_prompt: "You judge."}
decider:
  agent: judge
  schema: decision.json
  threshold: 0.75
intents:
  submit: {}
  approve: {description: Accept the change.}
  reject: {description: Send it back.}
root: draft
states:
  draft:
    on: {submit: [{target: review}]}
  review:
    description: A change waits for review.
    on:
      approve: [{target: approved}]
      reject: [{target: draft}]
  pinned:
    decider: human
    on:
      approve: [{target: approved}]
      reject: [{target: draft}]
  approved: {terminal: true}
`

const decisionSchema = `{"type":"object","required":["intent","confidence"],"properties":{"intent":{"type":"string"},"confidence":{"type":"number"},"reason":{"type":"string"}}}`

// judge answers every decision with the given verdict and records what it
// was asked.
type judge struct {
	verdict string
	asked   []string
}

func (j *judge) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	j.asked = append(j.asked, c.Request.Prompt)
	return &agent.AskResponse{Submission: json.RawMessage(j.verdict)}, nil
}
func (j *judge) Close() error { return nil }

// At a gate that owes a decision (one_shot, no decider: pin) the judge is
// asked with the gate's candidates and its confident choice is taken; an
// answer under the threshold leaves the gate to the operator; a room that
// pins decider: human is never judged.
func TestEngineDecider(t *testing.T) {
	fs := files{"app.yaml": deciderStory, "decision.json": decisionSchema}
	j := &judge{verdict: `{"intent":"approve","confidence":0.9,"reason":"looks right"}`}
	r := newRig(t, fs, withHostOpts(host.WithBuiltin(j)))
	out := r.do("submit")
	if out.State != "approved" {
		t.Fatalf("state = %q, want approved (the judge's choice)", out.State)
	}
	if len(j.asked) != 1 || !strings.Contains(j.asked[0], "approve: Accept the change.") || !strings.Contains(j.asked[0], "reject: Send it back.") {
		t.Errorf("the judge was asked %q", j.asked)
	}
	routed := r.events("turn.routed")
	if len(routed) != 1 || !strings.Contains(jsonOf(t, routed[0].Payload), `"tier":"decider"`) || !strings.Contains(jsonOf(t, routed[0].Payload), `"intent":"approve"`) {
		t.Errorf("turn.routed = %s", jsonOf(t, routed))
	}

	unsure := &judge{verdict: `{"intent":"approve","confidence":0.5}`}
	r = newRig(t, fs, withHostOpts(host.WithBuiltin(unsure)))
	if out := r.do("submit"); out.State != "review" {
		t.Errorf("a judge under the threshold moved the turn to %q", out.State)
	}
	if ev := r.events("turn.routed"); len(ev) != 1 || !strings.Contains(jsonOf(t, ev[0].Payload), "under 0.75") {
		t.Errorf("bail = %s", jsonOf(t, ev))
	}

	pinned := &judge{verdict: `{"intent":"approve","confidence":0.99}`}
	r = newRig(t, fs, withHostOpts(host.WithBuiltin(pinned)), withRoot("pinned"))
	if len(pinned.asked) != 0 || r.sess.State() != "pinned" {
		t.Errorf("decider: human was judged (%d asks, state %s)", len(pinned.asked), r.sess.State())
	}
}
