package host

import (
	"context"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// episodeAgent is a replaying agent that names ep (ok) and records the
// call it was asked about.
type episodeAgent struct {
	agent.AgentFunc
	ep    agent.Episode
	ok    bool
	asked *agent.Call
}

func (a *episodeAgent) SelectEpisode(_ context.Context, c *agent.Call) (agent.Episode, bool) {
	a.asked = c
	return a.ep, a.ok
}

// TestStepEpisode: a replaying agent's episode gives the call its cassette
// call_id (under the cassette's app id, else the story's) and the episode
// the start event carries; other agents keep the live call_id.
func TestStepEpisode(t *testing.T) {
	tests := []struct {
		name   string
		agent  agent.Agent
		wantID string
		wantEp agent.Episode
	}{
		{"not a replaying agent", agent.AgentFunc(nil), "cid", agent.Episode{}},
		{"no matching episode", &episodeAgent{ep: agent.Episode{ID: "x"}}, "cid", agent.Episode{}},
		{"the story's app id", &episodeAgent{ep: agent.Episode{ID: "loop", MatchIdx: 2}, ok: true},
			trace.CallID("app", "loop:2"), agent.Episode{ID: "loop", MatchIdx: 2}},
		{"the cassette's app id", &episodeAgent{ep: agent.Episode{ID: "audit_ok", AppID: "expense-triage"}, ok: true},
			"498da50176b0b991", agent.Episode{ID: "audit_ok", AppID: "expense-triage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := stepHost(&recSink{})
			c := stepCall("agent.x")
			c.agent = tt.agent
			sp := &spy{}
			if _, err := h.stepEpisode(context.Background(), c, sp.next); err != nil {
				t.Fatal(err)
			}
			if len(sp.calls) != 1 {
				t.Fatalf("next called %d times", len(sp.calls))
			}
			if c.req.CallID != tt.wantID || c.ep != tt.wantEp {
				t.Errorf("call_id %q, episode %+v; want %q, %+v", c.req.CallID, c.ep, tt.wantID, tt.wantEp)
			}
			if ea, ok := tt.agent.(*episodeAgent); ok && ea.asked != c.ac {
				t.Errorf("the selector was asked about %p, want the call's value %p", ea.asked, c.ac)
			}
		})
	}
}
