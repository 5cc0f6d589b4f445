package host

import (
	"context"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// TestStepCallID: the live call_id is the spec's formula over the app id,
// turn, state and the seq agent.call.start will get; the deadline is the
// start plus the timeout, in UTC RFC 3339.
func TestStepCallID(t *testing.T) {
	tests := []struct {
		name         string
		turn         int64
		state        string
		seq          int
		timeout      time.Duration
		wantKey      string
		wantDeadline string
	}{
		{"first event of the turn", 1, "s", 0, 90 * time.Second, "1:s:0", "2026-03-04T05:07:37Z"},
		{"later in a nested state", 12, "review.audit", 7, 1500 * time.Millisecond, "12:review.audit:7", "2026-03-04T05:06:08.5Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := stepHost(&recSink{seq: tt.seq})
			c := stepCall("agent.x")
			c.call.Turn, c.call.State, c.timeout = tt.turn, tt.state, tt.timeout
			sp := &spy{ans: answer{submission: "up"}}
			a, err := h.stepCallID(context.Background(), c, sp.next)
			if err != nil || a.submission != "up" {
				t.Fatalf("got %v, %v; want next's answer", a, err)
			}
			if len(sp.calls) != 1 {
				t.Fatalf("next called %d times", len(sp.calls))
			}
			if want := trace.CallID("app", tt.wantKey); c.req.CallID != want || c.ac.Request.CallID != want {
				t.Errorf("call_id = %q (agent's %q), want %q", c.req.CallID, c.ac.Request.CallID, want)
			}
			if c.req.Deadline != tt.wantDeadline {
				t.Errorf("deadline = %q, want %q", c.req.Deadline, tt.wantDeadline)
			}
			if !c.start.Equal(t0) {
				t.Errorf("start = %v, want %v", c.start, t0)
			}
		})
	}
}
