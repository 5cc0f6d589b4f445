package orchestrator

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

const retryStory = `
app: {id: retrying}
agent_plugins: {agent.c: {plugin: builtin.inprocess}}
intents: {run: {}}
world:
  got: {type: object, default: {}}
root: s
states:
  s:
    on:
      run:
        - target: "."
          effects:
            - invoke: host.agent.ask
              id: ask
              agent: agent.c
              with: {prompt: "one"}
              bind: {got: submitted}
              retry: {attempts: 3, backoff: 2s, on: [%s]}
`

// A call that fails with a kind its retry: lists is issued again, after
// the backoff on the session's clock, until it succeeds or the attempts
// are spent; a kind it does not list fails at once.
func TestRetryLocal(t *testing.T) {
	tests := []struct {
		name      string
		on        string
		failFirst int64
		calls     int64
		got       any
		lastError any
		events    []string
		moved     time.Duration
	}{
		{"succeeds on the third attempt", "transport_error", 2, 3, map[string]any{"n": int64(3), "call": "ask"}, "", retryEvents(2), 6 * time.Second},
		{"every attempt fails", "transport_error, plugin_crash", 9, 3, map[string]any{}, "agent: transport_error: call 3 failed", retryEvents(2), 6 * time.Second},
		{"the kind is not retried", "plugin_crash", 9, 1, map[string]any{}, "agent: transport_error: call 1 failed", nil, 0},
		{"no failure, no retry", "transport_error", 0, 1, map[string]any{"n": int64(1), "call": "ask"}, "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			clk := clock.NewFake(start)
			c := &counter{fail: func(n int64, _ *agent.AskRequest) bool { return n <= tt.failFirst }}
			r := newRig(t, files{"app.yaml": fmt.Sprintf(retryStory, tt.on)}, withAgent("agent.c", c), withClock(clk))
			out := r.do("run")
			if out.Outcome != OutcomeTransitioned {
				t.Fatalf("outcome %q (%v)", out.Outcome, out.Err)
			}
			if n := c.calls.Load(); n != tt.calls {
				t.Errorf("agent asked %d times, want %d", n, tt.calls)
			}
			if d := cmp.Diff(tt.got, r.sess.World()["got"]); d != "" {
				t.Errorf("world.got (-want +got):\n%s", d)
			}
			if le := r.sess.World()["last_error"]; le != tt.lastError {
				t.Errorf("last_error = %v, want %v", le, tt.lastError)
			}
			var events []string
			for _, ev := range r.events(KindCallRetry) {
				events = append(events, jsonOf(t, ev.Payload))
			}
			if d := cmp.Diff(tt.events, events); d != "" {
				t.Errorf("kitsoki.call.retry payloads (-want +got):\n%s", d)
			}
			if moved := clk.Now().Sub(start); moved != tt.moved {
				t.Errorf("the session's clock moved %v, want %v", moved, tt.moved)
			}
			// Each attempt is its own agent call, between one dispatch and
			// one return of the invoke.
			if n := len(r.events("agent.call.start")); int64(n) != tt.calls {
				t.Errorf("agent.call.start events: %d, want %d", n, tt.calls)
			}
			if n := len(r.events("harness.dispatched")); n != 1 {
				t.Errorf("harness.dispatched events: %d, want 1", n)
			}
		})
	}
}

// retryEvents are the kitsoki.call.retry payloads of n failed attempts of
// retryStory's call, each waiting twice the one before from 2 s.
func retryEvents(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf(`{"attempt":%d,"attempts":3,"call":"ask","error":"agent: transport_error: call %d failed","kind":"transport_error","namespace":"host.agent.ask","wait_ms":%d}`,
			i+1, i, 1000<<i))
	}
	return out
}

type kinded struct{}

func (kinded) Error() string       { return "lost" }
func (kinded) FailureKind() string { return "lost" }

type fromJournal struct{}

func (fromJournal) Error() string  { return "recorded" }
func (fromJournal) Replayed() bool { return true }

func TestFailureKind(t *testing.T) {
	for _, tt := range []struct {
		err      error
		kind     string
		replayed bool
	}{
		{agent.Errorf(agent.KindPluginCrash, "x"), "plugin_crash", false},
		{fmt.Errorf("wrapped: %w", agent.Errorf(agent.KindDeadlineExceeded, "x")), "deadline_exceeded", false},
		{errors.New("handler failed"), "host_error", false},
		{kinded{}, "lost", false},
		{fmt.Errorf("w: %w", fromJournal{}), "host_error", true},
	} {
		if got := FailureKind(tt.err); got != tt.kind {
			t.Errorf("FailureKind(%v) = %q, want %q", tt.err, got, tt.kind)
		}
		if got := replayed(tt.err); got != tt.replayed {
			t.Errorf("replayed(%v) = %v, want %v", tt.err, got, tt.replayed)
		}
	}
}
