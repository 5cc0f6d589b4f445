package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// TestStepDeadline: the agent's own outcome judged against the hard
// deadline (2s here, on the fake clock): late answers and failures the
// deadline or a cancellation caused are deadline_exceeded, an AskError
// stands, other errors and empty answers are plugin_crash, and a failed
// call keeps no response.
func TestStepDeadline(t *testing.T) {
	resp := &agent.AskResponse{Meta: map[string]any{"m": 1}}
	refused := agent.Errorf(agent.KindTransportError, "refused")
	const late = "agent: deadline_exceeded: no answer within the hard deadline of 2s; a late answer is discarded"
	tests := []struct {
		name     string
		took     time.Duration // fake time the agent took
		cancel   bool          // the run's context is cancelled during the call
		resp     *agent.AskResponse
		raw      error
		nextErr  error
		wantErr  string // "" = success
		wantKind agent.ErrorKind
		wantResp bool
	}{
		{name: "in time", took: time.Second, resp: resp, wantResp: true},
		{name: "just before the deadline", took: 2*time.Second - time.Nanosecond, resp: resp, wantResp: true},
		{name: "late answer", took: 2 * time.Second, resp: resp, wantErr: late, wantKind: agent.KindDeadlineExceeded},
		{name: "late and empty", took: 3 * time.Second, wantErr: late, wantKind: agent.KindDeadlineExceeded},
		{name: "no response and no error", wantErr: "agent: plugin_crash: agent returned no response and no error", wantKind: agent.KindPluginCrash},
		{name: "the agent's AskError stands", resp: resp, raw: refused, wantErr: "agent: transport_error: refused", wantKind: agent.KindTransportError},
		{name: "even after the deadline", took: 5 * time.Second, raw: refused, wantErr: "agent: transport_error: refused", wantKind: agent.KindTransportError},
		{name: "another error is a crash", raw: errors.New("exit status 2"), wantErr: "agent: plugin_crash: exit status 2", wantKind: agent.KindPluginCrash},
		{name: "unless the deadline caused it", took: 2 * time.Second, raw: context.DeadlineExceeded, wantErr: late, wantKind: agent.KindDeadlineExceeded},
		{name: "a cancelled run", cancel: true, raw: context.Canceled,
			wantErr: "agent: deadline_exceeded: call cancelled: context canceled", wantKind: agent.KindDeadlineExceeded},
		{name: "an error from further in passes", nextErr: errSinkFull, wantErr: "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, clk := stepHost(&recSink{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := stepCall("agent.x")
			var ended error        // the call's context once the agent is done
			var left time.Duration // its time left when the call began
			sp := &spy{ans: answer{resp: tt.resp, raw: tt.raw, answered: c.ac}, err: tt.nextErr, do: func(ctx context.Context, _ *askCall) {
				left, _ = clock.Remaining(ctx, clk)
				clk.Advance(tt.took)
				if tt.cancel {
					cancel()
				}
				ended = ctx.Err()
			}}
			a, err := h.stepDeadline(ctx, c, sp.next)
			if tt.nextErr != nil {
				if !errors.Is(err, tt.nextErr) {
					t.Fatalf("err = %v, want %v", err, tt.nextErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (ended != nil) != (tt.took >= 2*time.Second || tt.cancel) {
				t.Errorf("the call's context: %v after %v", ended, tt.took)
			}
			if left != 2*time.Second {
				t.Errorf("the call had %v left, want the 2s timeout", left)
			}
			if a.raw != nil || a.answered != c.ac {
				t.Errorf("raw %v and answered %p left on the answer, want nil and %p", a.raw, a.answered, c.ac)
			}
			if (a.resp != nil) != tt.wantResp {
				t.Errorf("response %v, want kept=%v", a.resp, tt.wantResp)
			}
			switch {
			case tt.wantErr == "" && a.err != nil:
				t.Errorf("failed: %v", a.err)
			case tt.wantErr != "" && (a.err == nil || a.err.Error() != tt.wantErr || a.err.Kind != tt.wantKind):
				t.Errorf("err = %v, want %s %q", a.err, tt.wantKind, tt.wantErr)
			}
		})
	}
}
