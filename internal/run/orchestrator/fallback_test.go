package orchestrator

import (
	"context"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// localish answers like a small local model: it declares itself
// fallback-eligible, as builtin.local_llm does.
type localish struct {
	agent.Agent
	eligible bool
}

func (l localish) FallbackEligible() bool { return l.eligible }

const fallbackStory = `
app: {id: fallback}
agent_plugins:
  agent.local: {plugin: builtin.inprocess}
world:
  verdict: {type: object, default: {}}
  meta: {type: object, default: {}}
intents: {go: {}}
root: s
states:
  s:
    on:
      go:
        - target: "."
          effects:
            - invoke: host.agent.decide
              agent: agent.local
              with: {prompt: "judge", schema: schemas/verdict.json}
              bind: {verdict: submitted, meta: meta}
`

func TestFallbackToClaude(t *testing.T) {
	bad := answer(`{"decision":"maybe","confidence":0.5}`)
	good := answer(`{"decision":"approve","confidence":0.8}`)
	var seen []string
	claude := &recorder{resp: func(req *agent.AskRequest) (*agent.AskResponse, error) {
		seen = append(seen, req.CallID)
		return good.Ask(context.Background(), agent.NewCall(req))
	}}
	tests := []struct {
		name      string
		local     agent.Agent
		claude    agent.Agent
		wantSubst bool
		wantOK    bool
	}{
		{"eligible, claude answers", localish{bad, true}, claude, true, true},
		{"eligible, claude fails too", localish{bad, true}, bad, true, false},
		{"not eligible: fails hard", localish{bad, false}, claude, false, false},
		{"eligible but valid: no fallback", localish{good, true}, bad, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			r := newRig(t, files{"app.yaml": fallbackStory, "schemas/verdict.json": verdictSchema},
				withAgent("agent.local", tt.local), withAgent(agent.DefaultAlias, tt.claude))
			out := r.do("go")
			if ok := len(out.HostErrors) == 0; ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v (errors %v)", ok, tt.wantOK, out.HostErrors)
			}
			starts := r.events(trace.KindAgentCallStart)
			closing := r.events(trace.KindAgentCallComplete, trace.KindAgentCallError)
			if len(starts) != 1 || len(closing) != 1 || closing[0].CallID != starts[0].CallID {
				t.Fatalf("want one start and one closing event with the same call_id: %d, %d", len(starts), len(closing))
			}
			subst, has := closing[0].Payload["substitution"]
			if has != tt.wantSubst {
				t.Fatalf("substitution present = %v, want %v: %s", has, tt.wantSubst, jsonOf(t, closing[0].Payload))
			}
			if tt.wantSubst {
				if got := jsonOf(t, subst); got != `{"fallback_plugin":"agent.claude","original_plugin":"agent.local","reason":"schema_invalid"}` {
					t.Errorf("substitution = %s", got)
				}
			}
			if tt.wantSubst && tt.wantOK {
				if closing[0].Kind != trace.KindAgentCallComplete {
					t.Fatalf("closing kind %s", closing[0].Kind)
				}
				if got := jsonOf(t, closing[0].Payload["meta"]); got != `{"fallback_of":"agent.local","model":"test"}` {
					t.Errorf("complete meta = %s", got)
				}
				if len(seen) != 1 || seen[0] != starts[0].CallID {
					t.Errorf("fallback call ids = %v, want the original %s", seen, starts[0].CallID)
				}
				if got := jsonOf(t, r.sess.World()["verdict"]); got != `{"confidence":0.8,"decision":"approve"}` {
					t.Errorf("bound verdict = %s", got)
				}
			}
			if tt.wantSubst && !tt.wantOK && closing[0].Kind != trace.KindAgentCallError {
				t.Errorf("closing kind %s, want agent.call.error", closing[0].Kind)
			}
			if !tt.wantSubst && !tt.wantOK && len(seen) != 0 {
				t.Errorf("agent.claude was asked without fallback eligibility")
			}
		})
	}
}
