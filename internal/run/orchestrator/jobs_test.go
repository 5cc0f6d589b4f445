package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const jobStory = `
app: {id: jobs-test}
hosts: [host.build, host.agent.decide]
world:
  build: {type: string, default: ""}
  log: {type: string, default: ""}
  seen_id: {type: string, default: ""}
  seen_result: {type: string, default: "unset"}
  status: {type: string, default: ""}
intents:
  go: {}
  poke: {}
root: idle
states:
  idle:
    on:
      go: [{target: building}]
  building:
    view: "building {{ world.build }}"
    on_enter:
      - invoke: host.build
        with: {target: all}
        background: true
        bind: {build: job_id, log: stdout}
        on_error: failed
        on_complete:
          - set: {status: "{{ world.last_job_status }}"}
          - say: "build {{ world.last_job_status }}"
          - when: "world.last_job_status == 'done'"
            target: done
          - target: idle
      - set:
          seen_id: "{{ world.build }}"
          seen_result: "{{ world.last_job_result }}"
    on:
      poke: [{target: .}]
  done:
    view: "done: {{ world.log }}"
  failed:
    view: "failed: {{ world.last_error }}"
`

type jobRig struct {
	t    *testing.T
	clk  *clock.Fake
	sink *trace.MemSink
	host *host.Host
	sess *Session
}

func newJobRig(t *testing.T, src string, handler host.Handler, agents map[string]agent.Agent) *jobRig {
	t.Helper()
	st, err := story.Load(writeStory(t, files{"app.yaml": src}), story.WithStubbedHosts()) // handler stubs the rig's host
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	for alias, a := range agents {
		reg.Register(alias, a)
	}
	t.Cleanup(func() { reg.Close() })
	sink := trace.NewMemSink(trace.WithClock(clk))
	h := host.New(st, reg, sink, host.WithClock(clk))
	if handler != nil {
		h.Register("host.build", handler)
	}
	sess, err := New(st, h, sink, WithSessionID("s1"), WithClock(clk), WithJobs(jobs.New(clk)), WithInbox(inbox.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	if _, err := sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &jobRig{t: t, clk: clk, sink: sink, host: h, sess: sess}
}

func (r *jobRig) turn(intent string) *Outcome {
	r.t.Helper()
	out, err := r.sess.Turn(context.Background(), intent, nil, "")
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *jobRig) settle() []*Outcome {
	r.t.Helper()
	outs, err := r.sess.Settle(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return outs
}

func (r *jobRig) kinds(n int64) []string {
	var out []string
	for _, ev := range r.sink.Events() {
		if ev.Turn == n {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// sleepy answers after d on the job's clock.
func sleepy(d time.Duration, data map[string]any, err error) host.Handler {
	return host.HandlerFunc(func(ctx context.Context, _ *host.Call) (*host.Result, error) {
		if e := jobs.Sleep(ctx, d); e != nil {
			return nil, e
		}
		return &host.Result{Data: data, Err: err}, nil
	})
}

// The job starts when its effect runs: the effects after it see the job's
// id, never its result; the turn does not wait for it.
func TestBackgroundSameTurnRule(t *testing.T) {
	r := newJobRig(t, jobStory, sleepy(time.Minute, map[string]any{"stdout": "ok"}, nil), nil)
	out := r.turn("go")
	if out.State != "building" || out.View != "building job-1" {
		t.Fatalf("turn: %s %q", out.State, out.View)
	}
	w := r.sess.World()
	if w["seen_id"] != "job-1" || w["seen_result"] != nil || w["last_job_id"] != "job-1" {
		t.Errorf("same-turn world: seen_id=%v seen_result=%v last_job_id=%v", w["seen_id"], w["seen_result"], w["last_job_id"])
	}
	want := []string{"turn.input", "turn.start", "machine.intent_accepted", "machine.transition", "machine.state_exited", "machine.state_entered",
		"harness.called", "harness.dispatched", "job.started", "world.update", "world.update", "world.update", "world.update", "turn.end"}
	if diff := cmp.Diff(want, r.kinds(1)); diff != "" {
		t.Errorf("turn 1 events (-want +got):\n%s", diff)
	}
	for _, ev := range r.sink.Events() {
		if ev.Kind == trace.KindHarnessDispatched && ev.Payload["background"] != true {
			t.Errorf("harness.dispatched background = %v", ev.Payload["background"])
		}
	}
	if outs := r.settle(); len(outs) != 0 {
		t.Errorf("delivered before the clock moved: %d", len(outs))
	}
}

// The completion is a turn of its own: last_job_* and the result's binds,
// then on_complete, whose first passing target: is taken.
func TestBackgroundCompletionTurn(t *testing.T) {
	r := newJobRig(t, jobStory, sleepy(time.Minute, map[string]any{"stdout": "built"}, nil), nil)
	r.turn("go")
	r.settle()
	r.clk.Advance(time.Minute)
	outs := r.settle()
	if len(outs) != 1 {
		t.Fatalf("%d job turns, want 1", len(outs))
	}
	o := outs[0]
	if o.Job != "job-1" || o.State != "done" || o.View != "done: built" || len(o.Says) != 1 || o.Says[0] != "build done" {
		t.Errorf("job turn: job=%s state=%s view=%q says=%v", o.Job, o.State, o.View, o.Says)
	}
	w := r.sess.World()
	if w["last_job_status"] != "done" || w["status"] != "done" || w["log"] != "built" {
		t.Errorf("world: %v %v %v", w["last_job_status"], w["status"], w["log"])
	}
	if diff := cmp.Diff(map[string]any{"stdout": "built"}, w["last_job_result"]); diff != "" {
		t.Errorf("last_job_result (-want +got):\n%s", diff)
	}
	want := []string{"turn.input", "turn.start", "harness.returned", "job.completed", "world.update", "world.update", "world.update",
		"world.update", "world.update", "machine.say", "machine.transition", "machine.state_exited", "machine.state_entered", "turn.end"}
	if diff := cmp.Diff(want, r.kinds(2)); diff != "" {
		t.Errorf("turn 2 events (-want +got):\n%s", diff)
	}
	got := r.sess.Inbox().Summary()
	if diff := cmp.Diff(inbox.Summary{Unread: 2, Severities: []string{"info", "success"}}, got); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

// A failed job runs on_complete too; its invoke's on_error then wins over
// the chain's target:.
func TestBackgroundFailureTakesOnError(t *testing.T) {
	r := newJobRig(t, jobStory, sleepy(time.Second, map[string]any{"stdout": "boom"}, errors.New("exit status 2")), nil)
	r.turn("go")
	r.settle()
	r.clk.Advance(time.Second)
	outs := r.settle()
	if len(outs) != 1 {
		t.Fatalf("%d job turns", len(outs))
	}
	o := outs[0]
	if o.State != "failed" || o.View != "failed: exit status 2" || r.sess.World()["status"] != "failed" {
		t.Errorf("state=%s view=%q status=%v", o.State, o.View, r.sess.World()["status"])
	}
	if len(o.Handled) != 1 || o.Handled[0].OnError != "failed" || o.Handled[0].Redirect != RedirectEntered || len(o.HostErrors) != 0 {
		t.Errorf("handled=%+v host errors=%v", o.Handled, o.HostErrors)
	}
	if got := r.sess.Inbox().Summary().Severities; !cmp.Equal(got, []string{"error", "info"}) {
		t.Errorf("severities %v", got)
	}
}

// What finished while nobody settled is delivered by the next Turn, before
// the user's turn, and reported with it.
func TestTurnDeliversFinishedJobsFirst(t *testing.T) {
	r := newJobRig(t, jobStory, sleepy(0, map[string]any{"stdout": "quick"}, nil), nil)
	r.turn("go")
	if err := r.sess.Jobs().Settle(context.Background()); err != nil { // finished, not delivered
		t.Fatal(err)
	}
	out := r.turn("poke")
	if len(out.Background) != 1 || out.Background[0].Job != "job-1" || out.Background[0].State != "done" {
		t.Fatalf("background: %+v", out.Background)
	}
	// poke is not allowed in done: the job turn came first.
	if out.Outcome != OutcomeRejected || out.Rejection.Code != CodeIntentNotAllowed {
		t.Errorf("user turn after delivery: %s %+v", out.Outcome, out.Rejection)
	}
}

// A background agent call's trace events are written in the completion
// turn, not in the turn that started it (turns never go back).
func TestBackgroundAgentCallTraceLandsInCompletionTurn(t *testing.T) {
	src := `
app: {id: jobs-agent}
hosts: [host.agent.ask]
agent_plugins: {agent.judge: {plugin: builtin.inprocess}}
world:
  verdict: {type: string, default: ""}
intents:
  go: {}
root: idle
states:
  idle:
    on:
      go: [{target: asking}]
  asking:
    on_enter:
      - invoke: host.agent.ask
        agent: agent.judge
        with: {prompt: "Decide."}
        background: true
        on_complete:
          - set: {verdict: "{{ world.last_job_status }}"}
`
	r := newJobRig(t, src, nil, map[string]agent.Agent{"agent.judge": answer(`{"v":"yes"}`)})
	r.turn("go")
	outs := r.settle()
	if len(outs) != 1 || r.sess.World()["verdict"] != "done" {
		t.Fatalf("job turns %d, verdict %v, result %v %v", len(outs), r.sess.World()["verdict"], r.sess.World()["last_job_result"], r.sess.World()["last_error"])
	}
	for _, ev := range r.sink.Events() {
		if ev.Kind == trace.KindAgentCallStart || ev.Kind == trace.KindAgentCallComplete {
			if ev.Turn != 2 {
				t.Errorf("%s in turn %d, want 2 (the completion turn)", ev.Kind, ev.Turn)
			}
		}
	}
	if k := r.kinds(2); len(k) < 4 || k[2] != trace.KindAgentCallStart || k[3] != trace.KindAgentCallComplete {
		t.Errorf("turn 2 events: %v", k)
	}
}

// Close cancels a job that still runs and waits for it.
func TestCloseCancelsRunningJobs(t *testing.T) {
	returned := make(chan error, 1)
	r := newJobRig(t, jobStory, host.HandlerFunc(func(ctx context.Context, _ *host.Call) (*host.Result, error) {
		<-ctx.Done()
		returned <- ctx.Err()
		return nil, ctx.Err()
	}), nil)
	r.turn("go")
	r.sess.Close()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("job ctx: %v", err)
		}
	default:
		t.Fatal("Close returned before the job did")
	}
	if i := r.sess.Jobs().List()[0]; i.Status != jobs.Cancelled {
		t.Errorf("status %s", i.Status)
	}
}

// Two background agent calls started in the same turn and state get
// distinct call ids.
func TestBackgroundAgentCallIDsAreDistinct(t *testing.T) {
	src := `
app: {id: jobs-ids}
hosts: [host.agent.ask]
agent_plugins: {agent.judge: {plugin: builtin.inprocess}}
intents:
  go: {}
root: idle
states:
  idle:
    on:
      go: [{target: asking}]
  asking:
    on_enter:
      - invoke: host.agent.ask
        agent: agent.judge
        with: {prompt: "One."}
        background: true
      - invoke: host.agent.ask
        agent: agent.judge
        with: {prompt: "Two."}
        background: true
`
	r := newJobRig(t, src, nil, map[string]agent.Agent{"agent.judge": answer(`{"v":1}`)})
	r.turn("go")
	if outs := r.settle(); len(outs) != 2 {
		t.Fatalf("%d job turns, want 2", len(outs))
	}
	ids := map[string]bool{}
	for _, ev := range r.sink.Events() {
		if ev.Kind == trace.KindAgentCallStart {
			ids[ev.CallID] = true
		}
	}
	if len(ids) != 2 {
		t.Errorf("call ids %v, want 2 distinct", ids)
	}
}

const settleStory = `
app: {id: jobs-settle}
hosts: [host.build, host.check]
world:
  status: {type: string, default: ""}
intents:
  go: {}
  poke: {}
  checked: {}
root: idle
states:
  idle:
    on:
      go: [{target: building}]
  building:
    on_enter:
      - invoke: host.build
        background: true
        on_complete:
          - target: verify
  verify:
    on_enter:
      - set: {status: ""}
      - invoke: host.check
        bind: {status: status}
      - when: "world.status != ''"
        emit_intent: checked
    on:
      poke: [{target: verify}]
      checked: [{target: done}]
  done: {}
`

// A job's completion turn enters its on_complete target and dispatches the
// target's on_enter calls, but runs no post-bind settle pass: the
// emit_intent whose guard reads the bind waits for the next user turn in
// that state (Kitsoki's completion handler behaves so; its flows rely on
// it).
func TestJobCompletionTurnHasNoPostBindSettle(t *testing.T) {
	build := host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
		return &host.Result{Data: map[string]any{}}, nil
	})
	r := newJobRig(t, settleStory, build, nil)
	checks := 0
	r.host.Register("host.check", host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
		checks++
		return &host.Result{Data: map[string]any{"status": "passed"}}, nil
	}))
	r.turn("go")
	outs := r.settle()
	if len(outs) != 1 || outs[0].State != "verify" {
		t.Fatalf("after the job: outcomes %+v, want one turn ending in verify", outs)
	}
	if checks != 1 || r.sess.World()["status"] != "passed" {
		t.Fatalf("after the job: %d checks, status %v; want the target's call dispatched and bound", checks, r.sess.World()["status"])
	}
	if out := r.turn("poke"); out.State != "done" {
		t.Errorf("poke in verify: state %q, want done (the user turn's post-bind pass fires checked)", out.State)
	}
}
