package orchestrator

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// An on_error naming no state of the story loads (with a warning, as
// Kitsoki accepts it) and is looked up when the call fails; when it still
// names no state the turn ends with a fault saying where on_error is, in
// which state, and how to fix it.
func TestDeferredOnErrorFaultsWhenItNamesNoState(t *testing.T) {
	const src = `
app: {id: deferred}
agent_plugins: {agent.c: {plugin: builtin.inprocess}}
intents: {run: {}}
root: s
states:
  s:
    on:
      run:
        - target: "."
          effects:
            - invoke: host.agent.ask
              agent: agent.c
              with: {prompt: "one"}
              on_error: idle
`
	tests := []struct {
		name    string
		fail    bool
		outcome string
		err     string
	}{
		{"the call succeeds: the target is never looked up", false, OutcomeTransitioned, ""},
		{"the call fails", true, OutcomeError,
			`app.yaml:15:25: state "s": invoke host.agent.ask failed and its on_error "idle" names no state here, which is not a state (declare the state, or point on_error at one that exists)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &counter{fail: func(int64, *agent.AskRequest) bool { return tt.fail }}
			r := newRig(t, files{"app.yaml": src}, withAgent("agent.c", c))
			out := r.do("run")
			if out.Outcome != tt.outcome {
				t.Fatalf("outcome = %q (%v), want %q", out.Outcome, out.Err, tt.outcome)
			}
			got := ""
			if out.Err != nil {
				got = out.Err.Error()
			}
			if got != tt.err {
				t.Errorf("error = %q\nwant    %q", got, tt.err)
			}
			if out.State != "s" {
				t.Errorf("state = %q, want s", out.State)
			}
		})
	}
}
