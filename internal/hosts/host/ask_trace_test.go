package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestStepTrace: agent.call.start before the call (with the episode on its
// envelope), then agent.call.complete or agent.call.error with the time
// the rest of the chain took and the persona and model of the agent that
// answered; a trace that cannot be written stops the call as a TraceError.
func TestStepTrace(t *testing.T) {
	persona := &agent.Persona{Name: "judge"}
	fallbackCall := &agent.Call{Alias: agent.DefaultAlias, Persona: persona, Model: "claude-m"}
	subst := &trace.Substitution{Reason: "schema_invalid", OriginalPlugin: "agent.x", FallbackPlugin: agent.DefaultAlias}
	failed := agent.Errorf(agent.KindSchemaInvalid, "/decision: enum")
	sch := compileSchema(t, `{"type":"object"}`)
	pinned := true
	tests := []struct {
		name      string
		alias     string
		withSch   bool
		route     *Route
		ep        agent.Episode
		ans       answer
		nextErr   error
		failAt    int
		wantStart trace.AgentCallStart
		wantEnd   trace.Payload // nil: no closing event
		wantErr   string
		noNext    bool
	}{
		{name: "complete", alias: "agent.x", withSch: true,
			ans:       answer{resp: &agent.AskResponse{Meta: map[string]any{"cost": 1}}, submission: map[string]any{"ok": true}},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m", Input: map[string]any{"schema_present": true}},
			wantEnd: trace.AgentCallComplete{Verb: "decide", DurationMS: 1250, Model: "m", Meta: map[string]any{"cost": 1},
				Response: trace.AgentResponse{Submission: map[string]any{"ok": true}, Meta: map[string]any{"cost": 1}}}},
		{name: "built-in path, routed and pinned", withSch: true,
			route: &Route{Profile: "fast", Effort: "low", Pin: &PinState{Applied: true, Evidence: "e.json"}},
			ans:   answer{resp: &agent.AskResponse{}, submission: "s"},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m", Input: map[string]any{"schema_path": "v.json"},
				Profile: "fast", Effort: "low", Pinned: &pinned, PinEvidence: "e.json"},
			wantEnd: trace.AgentCallComplete{Verb: "decide", DurationMS: 1250, Model: "m",
				Response: trace.AgentResponse{Submission: "s"}}},
		{name: "no schema, no input; answered by the fallback", alias: "agent.x",
			ans:       answer{resp: &agent.AskResponse{}, submission: "s", answered: fallbackCall, subst: subst},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m"},
			wantEnd: trace.AgentCallComplete{Verb: "decide", DurationMS: 1250, Agent: "judge", Model: "claude-m", Substitution: subst,
				Response: trace.AgentResponse{Submission: "s"}}},
		{name: "error", alias: "agent.x", ep: agent.Episode{ID: "ep1", MatchIdx: 3},
			ans:       answer{err: failed, answered: fallbackCall, subst: subst},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m"},
			wantEnd: trace.AgentCallError{Verb: "decide", DurationMS: 1250, Agent: "judge", Model: "claude-m", Substitution: subst,
				Error: "agent: schema_invalid: /decision: enum", ErrorKind: "schema_invalid"}},
		{name: "start cannot be written", alias: "agent.x", failAt: 1, noNext: true,
			wantErr: "trace: disk full"},
		{name: "closing event cannot be written", alias: "agent.x", failAt: 2,
			ans:       answer{resp: &agent.AskResponse{}},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m"},
			wantErr:   "trace: disk full"},
		{name: "an error from further in passes, unclosed", alias: "agent.x", nextErr: &TraceError{errSinkFull},
			wantStart: trace.AgentCallStart{Verb: "decide", Prompt: "Decide.", Model: "m"},
			wantErr:   "trace: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recSink{failAt: tt.failAt}
			h, clk := stepHost(sink)
			c := stepCall(tt.alias)
			c.start, c.route, c.ep = t0, tt.route, tt.ep
			if tt.withSch {
				c.schema = sch
			}
			sp := &spy{ans: tt.ans, err: tt.nextErr, do: func(context.Context, *askCall) { clk.Advance(1250 * time.Millisecond) }}
			a, err := h.stepTrace(context.Background(), c, sp.next)
			if tt.wantErr != "" {
				var te *TraceError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &te) {
					t.Fatalf("err = %v, want TraceError %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if diff := cmp.Diff(tt.ans, a, cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("answer changed (-want +got):\n%s", diff)
			}
			if (len(sp.calls) == 0) != tt.noNext {
				t.Fatalf("next called %d times", len(sp.calls))
			}
			var want []trace.Payload
			if !tt.noNext {
				want = append(want, tt.wantStart)
			}
			if tt.wantEnd != nil {
				want = append(want, tt.wantEnd)
			}
			if diff := cmp.Diff(want, sink.payloads); diff != "" {
				t.Errorf("payloads (-want +got):\n%s", diff)
			}
			if len(sink.events) > 0 {
				wantEv := plugin.Event{Turn: 3, StatePath: "s", CallID: "cid", EpisodeID: tt.ep.ID, MatchIdx: tt.ep.MatchIdx}
				if diff := cmp.Diff(wantEv, sink.events[0]); diff != "" {
					t.Errorf("start envelope (-want +got):\n%s", diff)
				}
				for _, ev := range sink.events[1:] {
					if diff := cmp.Diff(plugin.Event{Turn: 3, StatePath: "s", CallID: "cid"}, ev); diff != "" {
						t.Errorf("closing envelope (-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}
