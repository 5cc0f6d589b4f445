package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

const timeoutStory = `
app: {id: timeouts}
world:
  visits: {type: int, default: 0}
intents: {poke: {}, wait: {}, go: {}}
root: waiting
states:
  waiting:
    view: "waiting"
    timeout: {after: 10m, target: gone}
    on_enter: [{increment: {visits: 1}}]
    on:
      poke: [{target: .}]
      wait: [{target: waiting}]
      go: [{target: room}]
  room:
    type: compound
    initial: a
    timeout: {after: 1h, target: gone}
    states:
      a:
        timeout: {after: 5m, target: b}
      b: {view: "b"}
  gone:
    view: "gone after {{ world.visits }}"
    terminal: true
`

func TestTimeout(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newRig(t, files{"app.yaml": timeoutStory}, withClock(clk))
	clk.Advance(9 * time.Minute)
	if out, err := r.sess.Tick(ctx); err != nil || out != nil {
		t.Fatalf("Tick before the time is up: %v, %v; want nothing", out, err)
	}
	r.do("poke") // "." does not re-enter: the timer runs on
	clk.Advance(time.Minute)
	out, err := r.sess.Tick(ctx)
	if err != nil || out == nil || out.State != "gone" || !out.Done || out.View != "gone after 1" {
		t.Fatalf("Tick at 10m: %+v, %v; want gone, done", out, err)
	}
	var trans []string
	for _, ev := range r.events("machine.transition") {
		trans = append(trans, ev.Payload["from"].(string)+">"+ev.Payload["to"].(string)+":"+ev.Payload["intent"].(string))
	}
	if diff := cmp.Diff([]string{">waiting:__seed__", "waiting>waiting:poke", "waiting>gone:__timeout__"}, trans); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

func TestTimeoutReentryAndNesting(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newRig(t, files{"app.yaml": timeoutStory}, withClock(clk))
	clk.Advance(8 * time.Minute)
	r.do("wait") // re-entry restarts the timer
	clk.Advance(8 * time.Minute)
	if out, _ := r.sess.Tick(ctx); out != nil {
		t.Fatalf("timer not restarted by re-entry: fired into %s", out.State)
	}
	r.do("go") // leaving waiting drops its timer; room.a's and room's start
	clk.Advance(5 * time.Minute)
	out, err := r.sess.Tick(ctx)
	if err != nil || out == nil || out.State != "room.b" {
		t.Fatalf("inner timeout: %+v, %v; want room.b", out, err)
	}
	// A due timeout fires before the user's turn is taken.
	clk.Advance(time.Hour)
	o := r.do("go")
	if r.sess.State() != "gone" || o.Rejection == nil || o.Rejection.Code != CodeIntentNotAllowed {
		t.Fatalf("state %s, rejection %+v; want the outer timeout to have fired, then go refused in gone", r.sess.State(), o.Rejection)
	}
}

// A timeout is traced: turn.input, machine.timeout, then the transition.
func TestTimeoutTrace(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newRig(t, files{"app.yaml": timeoutStory}, withClock(clk))
	clk.Advance(10 * time.Minute)
	if _, err := r.sess.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"turn.input", "turn.start", "machine.timeout", "machine.transition", "machine.state_exited", "machine.state_entered", "turn.end"}
	if diff := cmp.Diff(want, r.kinds(1)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	ev := r.events("machine.timeout")[0]
	if got := jsonOf(t, ev.Payload); got != `{"after":"10m0s","state":"waiting","target":"gone"}` {
		t.Errorf("payload = %s", got)
	}
}

func TestNextTimeout(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	r := newRig(t, files{"app.yaml": timeoutStory}, withClock(clk))
	if due, ok := r.sess.NextTimeout(); !ok || !due.Equal(start.Add(10*time.Minute)) {
		t.Fatalf("NextTimeout in waiting = %v, %v; want %v", due, ok, start.Add(10*time.Minute))
	}
	r.do("go") // room (1h) and room.a (5m): the earlier is due first
	if due, ok := r.sess.NextTimeout(); !ok || !due.Equal(start.Add(5*time.Minute)) {
		t.Fatalf("NextTimeout in room.a = %v, %v; want %v", due, ok, start.Add(5*time.Minute))
	}
	clk.Advance(time.Hour)
	if _, err := r.sess.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if due, ok := r.sess.NextTimeout(); ok {
		t.Errorf("NextTimeout in the terminal state = %v, want none", due)
	}
}

func TestRestoreTimeouts(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newRig(t, files{"app.yaml": timeoutStory}, withClock(clock.NewFake(start)))
	want := []ArmedTimeout{{State: "room", Due: start.Add(time.Hour)}, {State: "room.a", Due: start.Add(time.Minute)}}
	if err := r.sess.RestoreTimeouts(want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, r.sess.Timeouts()); d != "" {
		t.Errorf("Timeouts (-want +got):\n%s", d)
	}
	err := r.sess.RestoreTimeouts([]ArmedTimeout{{State: "gone", Due: start}})
	if err == nil || err.Error() != `the carried timeout of state "gone": no such state with a timeout: in the story` {
		t.Errorf("RestoreTimeouts(gone) = %v", err)
	}
}
