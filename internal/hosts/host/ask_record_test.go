package host

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestStepRecord: sub-events that keep the contract land in the trace
// under the call's turn, state and call_id (whatever envelope the agent
// gave them); one breach fails the call and writes none.
func TestStepRecord(t *testing.T) {
	foreign := plugin.Event{Kind: "agent.x.step", CallID: "cid", Turn: 9, StatePath: "elsewhere", TS: "2020-01-01T00:00:00Z", Seq: 4,
		ParentTurn: 2, EpisodeID: "e", MatchIdx: 1, Payload: map[string]any{"tool": "bash"}}
	landed := plugin.Event{Kind: "agent.x.step", CallID: "cid", Turn: 3, StatePath: "s", Payload: map[string]any{"tool": "bash"}}
	tests := []struct {
		name     string
		alias    string
		evs      []plugin.Event
		upstream *agent.AskError
		failAt   int
		want     []plugin.Event
		wantErr  string
	}{
		{name: "none", alias: "agent.x"},
		{name: "the envelope is the call's", alias: "agent.x", evs: []plugin.Event{foreign, {Kind: "agent.x.", CallID: "cid"}},
			want: []plugin.Event{landed, {Kind: "agent.x.", CallID: "cid", Turn: 3, StatePath: "s"}}},
		{name: "the built-in path's namespace is agent.claude", alias: "", evs: []plugin.Event{{Kind: "agent.claude.tool", CallID: "cid"}},
			want: []plugin.Event{{Kind: "agent.claude.tool", CallID: "cid", Turn: 3, StatePath: "s"}}},
		{name: "outside the namespace", alias: "agent.x", evs: []plugin.Event{foreign, {Kind: "agent.xy.step", CallID: "cid"}},
			wantErr: `agent: sub_event_namespace_violation: sub_event[1]: Kind "agent.xy.step" does not start with required namespace prefix "agent.x."`},
		{name: "the alias alone", alias: "agent.x", evs: []plugin.Event{{Kind: "agent.x", CallID: "cid"}},
			wantErr: `agent: sub_event_namespace_violation: sub_event[0]: Kind "agent.x" does not start with required namespace prefix "agent.x."`},
		{name: "another call's id", alias: "agent.x", evs: []plugin.Event{{Kind: "agent.x.step", CallID: "other"}},
			wantErr: `agent: sub_event_call_id_mismatch: sub_event[0]: CallID "other" does not match parent call_id "cid"`},
		{name: "the trace refuses one", alias: "agent.x", evs: []plugin.Event{foreign, foreign}, failAt: 2,
			want:    []plugin.Event{landed},
			wantErr: "agent: transport_error: sub_event[1]: trace: disk full"},
		{name: "a failure from further in", alias: "agent.x", evs: []plugin.Event{foreign}, upstream: agent.Errorf(agent.KindDeadlineExceeded, "late"),
			wantErr: "agent: deadline_exceeded: late"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recSink{failAt: tt.failAt}
			h, _ := stepHost(sink)
			c := stepCall(tt.alias)
			resp := &agent.AskResponse{SubEvents: tt.evs}
			before := slices.Clone(tt.evs)
			sp := &spy{ans: answer{resp: resp, err: tt.upstream}}
			a, err := h.stepRecord(context.Background(), c, sp.next)
			if err != nil {
				t.Fatal(err)
			}
			if a.resp != resp {
				t.Error("the response was dropped")
			}
			gotErr := ""
			if a.err != nil {
				gotErr = a.err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("err = %q, want %q", gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, sink.events); diff != "" {
				t.Errorf("trace (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, resp.SubEvents); diff != "" {
				t.Errorf("the agent's own sub-events were modified (-before +after):\n%s", diff)
			}
		})
	}
}
