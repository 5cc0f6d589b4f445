package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// A turn's outcome lists the failures on_error handled, with the call_id
// of the agent call and what became of the redirect, so kitsoki run can
// show them.
func TestOutcomeListsHandledFailures(t *testing.T) {
	type row struct {
		Namespace, Call, Err, OnError, Redirect string
		HasCallID                               bool
	}
	rows := func(out *Outcome) []row {
		var rs []row
		for _, h := range out.Handled {
			if _, ok := agent.AsAskError(h.Err); !ok {
				t.Errorf("%s: the failure is not an AskError: %T", h.Namespace, h.Err)
			}
			rs = append(rs, row{h.Namespace, h.Call, h.Err.Error(), h.OnError, h.Redirect, h.CallID != ""})
		}
		return rs
	}
	failed := func(n string) string { return "agent: transport_error: call " + n + " failed" }
	tests := []struct {
		intent string
		want   []row
	}{
		{"run", []row{{"host.agent.ask", "first", failed("1"), "recovery", RedirectEntered, true}}},
		{"self", []row{{"host.agent.ask", "", failed("1"), "s", RedirectIgnored, true}}},
		{"chain", []row{
			{"host.agent.ask", "", failed("1"), "f2", RedirectEntered, true},
			{"host.agent.ask", "", failed("2"), "f3", RedirectEntered, true},
			{"host.agent.ask", "", failed("3"), "f4", RedirectEntered, true},
			{"host.agent.ask", "", failed("4"), "f5", RedirectEntered, true},
			{"host.agent.ask", "", failed("5"), "f6", RedirectCapped, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.intent, func(t *testing.T) {
			c := &counter{fail: func(int64, *agent.AskRequest) bool { return true }}
			r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
			out := r.do(tt.intent)
			if diff := cmp.Diff(tt.want, rows(out)); diff != "" {
				t.Errorf("Handled (-want +got):\n%s", diff)
			}
			if len(out.HostErrors) != 0 {
				t.Errorf("handled failures reported as unhandled: %v", out.HostErrors)
			}
		})
	}
}
