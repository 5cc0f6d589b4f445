package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// payHandlers answer testdata/lost's calls: charge returns a receipt;
// note fails with a domain error while failNotes lasts, then writes.
type payHandlers struct {
	charges, notes atomic.Int64
	failNotes      int64
}

func (p *payHandlers) config(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)), Handlers: map[string]host.Handler{
		"host.pay.charge": host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
			p.charges.Add(1)
			return &host.Result{Data: map[string]any{"receipt": "r-1"}}, nil
		}),
		"host.pay.note": host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
			if n := p.notes.Add(1); n <= p.failNotes {
				return &host.Result{Err: errors.New("the note service is busy")}, nil
			}
			return &host.Result{Data: map[string]any{"text": "written"}}, nil
		}),
	}}
}

func lostRef(t *testing.T) StoryRef {
	t.Helper()
	st, err := story.Load("testdata/lost/app.yaml", story.WithProvidedHandlers("host.pay.charge", "host.pay.note")) // the test registers its own
	if err != nil {
		t.Fatal(err)
	}
	return StoryRef{Path: "lost/app.yaml", Hash: st.ContentHash}
}

// lostEnv is a test environment on testdata whose invoke activity is
// a's, behind a mock that answers the first lost calls with err.
func lostEnv(t *testing.T, p *payHandlers, lost int, err error) (*testsuite.TestWorkflowEnvironment, *atomic.Int64) {
	t.Helper()
	env := loadedEnv()
	stories := &Stories{Dir: "testdata", Options: []story.Option{story.WithProvidedHandlers("host.pay.charge", "host.pay.note")}} // the test registers them
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories, LostCallAttempts: 3}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	a := &Activities{Stories: stories, Config: p.config}
	env.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	var attempts atomic.Int64
	env.OnActivity(InvokeActivity, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in InvokeInput) (*InvokeResult, error) {
			if attempts.Add(1) <= int64(lost) {
				return nil, err
			}
			return a.Invoke(ctx, in)
		})
	return env, &attempts
}

// loadedEnv is the workflow test environment every test here uses. Its
// deadlock detection allows a minute without a yield instead of 1 s: the
// detector reads the wall clock, and a -race test binary sharing two
// cores with other test binaries was seen off the CPU for over a second
// (CI, load 24). Workflow code that never yields still fails.
func loadedEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return env
}

func runIntents(t *testing.T, env *testsuite.TestWorkflowEnvironment, ref StoryRef, intents ...string) (SessionResult, []trace.Event) {
	t.Helper()
	return runIntentsWith(t, env, SessionInput{Story: ref, SessionID: "s1"}, intents...)
}

func runIntentsWith(t *testing.T, env *testsuite.TestWorkflowEnvironment, in SessionInput, intents ...string) (SessionResult, []trace.Event) {
	t.Helper()
	var steps []step
	for _, i := range intents {
		steps = append(steps, step{intent: i})
	}
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, steps, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 0 {
		t.Fatalf("rejected: %v", rejected)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func eventsOf(evs []trace.Event, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e.Payload)
		}
	}
	return out
}

// A call lost with its worker (no heartbeat, no result) is issued again;
// the session ends as if the call had answered the first time, and the
// answering attempt notes that it was a re-issue.
func TestLostCallIsIssuedAgain(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"heartbeat timeout", temporal.NewHeartbeatTimeoutError()},
		{"worker stopped", temporal.NewApplicationError("the call's worker stopped during it", ErrTypeLost)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &payHandlers{}
			env, attempts := lostEnv(t, p, 1, tt.err)
			res, evs := runIntents(t, env, lostRef(t), "note")
			if res.State != "noted" || res.World.Map()["note"] != "written" {
				t.Errorf("final state %q, world %v", res.State, res.World.Map())
			}
			if n := attempts.Load(); n != 2 {
				t.Errorf("activity attempts: %d, want 2 (the lost one and its re-issue)", n)
			}
			if n := p.notes.Load(); n != 1 {
				t.Errorf("note handler ran %d times, want 1 (the lost attempt never reached it)", n)
			}
			want := []map[string]any{{"namespace": "host.pay.note", "attempt": int64(2)}}
			got := eventsOf(evs, KindCallReissued)
			if d := cmp.Diff(want, normalize(got)); d != "" {
				t.Errorf("%s events (-want +got):\n%s", KindCallReissued, d)
			}
		})
	}
}

// normalize gives JSON numbers one Go type for comparisons.
func normalize(ms []map[string]any) []map[string]any {
	for _, m := range ms {
		for k, v := range m {
			switch n := v.(type) {
			case float64:
				m[k] = int64(n)
			case int:
				m[k] = int64(n)
			case json.Number:
				m[k], _ = n.Int64()
			}
		}
	}
	return ms
}

// An external_side_effect call lost with its worker is not issued again:
// it fails with an error bound like any call error (on_error taken).
func TestLostSideEffectCallFails(t *testing.T) {
	p := &payHandlers{}
	env, attempts := lostEnv(t, p, 99, temporal.NewHeartbeatTimeoutError())
	res, _ := runIntents(t, env, lostRef(t), "pay")
	if n := attempts.Load(); n != 1 {
		t.Errorf("activity attempts: %d, want 1", n)
	}
	want := "host.pay.charge (call charge) was lost with its worker (no heartbeat within the heartbeat timeout) and is marked external_side_effect: true, " +
		"so it may have taken effect already; it is not issued again (handle the failure with on_error:, or drop external_side_effect: if the call is safe to repeat)"
	if res.State != "failed" || res.World.Map()["last_error"] != want {
		t.Errorf("state %q, last_error %q\nwant failed, %q", res.State, res.World.Map()["last_error"], want)
	}
}

// A call lost on every attempt fails once the attempts are spent.
func TestLostCallAttemptsSpent(t *testing.T) {
	p := &payHandlers{}
	env, attempts := lostEnv(t, p, 99, temporal.NewHeartbeatTimeoutError())
	res, _ := runIntents(t, env, lostRef(t), "note")
	if n := attempts.Load(); n != 3 {
		t.Errorf("activity attempts: %d, want 3", n)
	}
	want := "host.pay.note (call note) was lost with its worker 3 times (last: no heartbeat within the heartbeat timeout); it is not issued again"
	if res.World.Map()["last_error"] != want {
		t.Errorf("last_error %q\nwant      %q", res.World.Map()["last_error"], want)
	}
}

// retry: on the workflow: a call that answered with a listed failure is
// issued again after the backoff (a workflow timer, skipped by the test
// suite), exactly as a local run of the same story does.
func TestRetryOnTheWorkflowMatchesLocal(t *testing.T) {
	ref := lostRef(t)
	p := &payHandlers{failNotes: 2}
	env, attempts := lostEnv(t, p, 0, nil)
	start := env.Now()
	res, evs := runIntents(t, env, ref, "note")
	if n := attempts.Load(); n != 3 {
		t.Errorf("activity attempts: %d, want 3 (each retry is its own activity)", n)
	}
	if waited := env.Now().Sub(start); waited < 15*time.Second {
		t.Errorf("workflow time moved %v, want the backoffs 5 s + 10 s at least", waited)
	}

	st, err := story.Load("testdata/lost/app.yaml", story.WithProvidedHandlers("host.pay.charge", "host.pay.note")) // the test registers its own
	if err != nil {
		t.Fatal(err)
	}
	lp := &payHandlers{failNotes: 2}
	cfg := lp.config(st)
	cfg.Session = &runtime.Session{ID: "s1", Journal: true} // as kitsoki run's durable session
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	if _, err := rt.Session().Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Session().Turn(ctx, "note", nil, ""); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rt.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	local := append([]trace.Event(nil), rt.Memory().Events()...)
	if d := cmp.Diff(kindsOf(local), kindsOf(evs)); d != "" {
		t.Errorf("trace kinds (-local +workflow):\n%s", d)
	}
	if d := cmp.Diff(normalize(eventsOf(local, orchestrator.KindCallRetry)), normalize(eventsOf(evs, orchestrator.KindCallRetry))); d != "" {
		t.Errorf("retry events (-local +workflow):\n%s", d)
	}
	if n := len(eventsOf(evs, orchestrator.KindCallRetry)); n != 2 || lp.notes.Load() != 3 || p.notes.Load() != 3 {
		t.Errorf("retry events %d, local calls %d, workflow calls %d; want 2, 3, 3", n, lp.notes.Load(), p.notes.Load())
	}
}

func kindsOf(evs []trace.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// The invoke activity heartbeats while a call runs: the call below waits
// (bounded) until the test environment saw a heartbeat from it.
func TestInvokeHeartbeats(t *testing.T) {
	env := loadedEnv()
	beat := make(chan struct{})
	var once sync.Once
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { once.Do(func() { close(beat) }) })
	stories := &Stories{Dir: "testdata", Options: []story.Option{story.WithProvidedHandlers("host.pay.charge", "host.pay.note")}} // the test registers them
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	var waited atomic.Bool
	var timeout atomic.Int64
	a := &Activities{Stories: stories, Config: func(*story.Story) runtime.Config {
		return runtime.Config{IgnorePins: true, Handlers: map[string]host.Handler{
			"host.pay.note": host.HandlerFunc(func(ctx context.Context, _ *host.Call) (*host.Result, error) {
				timeout.Store(int64(activity.GetInfo(ctx).HeartbeatTimeout))
				select {
				case <-beat:
					waited.Store(true)
				case <-time.After(10 * time.Second):
				}
				return &host.Result{Data: map[string]any{"text": "written"}}, nil
			}),
		}}
	}}
	env.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	res, _ := runIntentsWith(t, env, SessionInput{Story: lostRef(t), SessionID: "s1", HeartbeatTimeout: time.Second}, "note")
	if !waited.Load() {
		t.Error("the call saw no heartbeat in 10 s (heartbeat timeout 1 s: one every 200 ms)")
	}
	if got := time.Duration(timeout.Load()); got != time.Second {
		t.Errorf("the activity's heartbeat timeout is %v, want the session input's 1s", got)
	}
	if res.World.Map()["note"] != "written" {
		t.Errorf("world %v", res.World.Map())
	}
}

// noteInvoke is the reference of testdata/lost's note invoke.
func noteInvoke(t *testing.T, stories *Stories, ref StoryRef) InvokeRef {
	t.Helper()
	st, err := stories.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	at, err := stories.Ref(ref, st.States["idle"].On["note"][0].Effects[0].Invoke)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// Infrastructure failures of the activity are non-retryable application
// errors: only a lost call is ever issued again.
func TestInvokeFailuresAreNotRetryable(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	stories := &Stories{Dir: "testdata", Options: []story.Option{story.WithProvidedHandlers("host.pay.charge", "host.pay.note")}} // the test registers them
	a := &Activities{Stories: stories, Config: func(*story.Story) runtime.Config {
		return runtime.Config{IgnorePins: true, Handlers: map[string]host.Handler{
			"host.pay.note": host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) { panic("boom") }),
		}}
	}}
	env.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	ref := lostRef(t)
	for _, tt := range []struct {
		name string
		in   InvokeInput
		want string
	}{
		{"the story changed", InvokeInput{Story: StoryRef{Path: ref.Path, Hash: "sha256:00"}, Namespace: "host.pay.note"}, "content hash is"},
		{"the handler panics", InvokeInput{Story: ref, Invoke: noteInvoke(t, stories, ref), Namespace: "host.pay.note"}, "the invoke activity panicked: boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.ExecuteActivity(InvokeActivity, tt.in)
			ae, ok := errors.AsType[*temporal.ApplicationError](err)
			if !ok || !ae.NonRetryable() || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v (application error %v, non-retryable %v); want a non-retryable one containing %q", err, ok, ok && ae.NonRetryable(), tt.want)
			}
		})
	}
}

// A call's activity options: the session's heartbeat timeout, a retry
// policy that re-issues only lost calls (up to the worker's attempts),
// one attempt for an external_side_effect invoke.
func TestActivityOptions(t *testing.T) {
	d := &activityDispatcher{timeout: time.Minute, heartbeat: 3 * time.Second, lostAttempts: 4}
	for _, tt := range []struct {
		name     string
		inv      *story.Invoke
		args     map[string]any
		attempts int32
		stc      time.Duration
	}{
		{"a call", &story.Invoke{Name: "host.pay.note"}, nil, 4, time.Minute + StartToCloseGrace},
		{"with.timeout", &story.Invoke{Name: "host.pay.note"}, map[string]any{"timeout": "5s"}, 4, 5*time.Second + StartToCloseGrace},
		{"external_side_effect", &story.Invoke{Name: "host.pay.charge", ExternalSideEffect: true}, nil, 1, time.Minute + StartToCloseGrace},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := d.activityOptions(&host.Call{Namespace: tt.inv.Name, Invoke: tt.inv, Args: tt.args}, "at "+InvokeRef{File: "app.yaml", Line: 3, Col: 7}.String())
			if o.HeartbeatTimeout != 3*time.Second || o.StartToCloseTimeout != tt.stc || o.RetryPolicy.MaximumAttempts != tt.attempts {
				t.Errorf("heartbeat %v, start-to-close %v, attempts %d; want 3s, %v, %d",
					o.HeartbeatTimeout, o.StartToCloseTimeout, o.RetryPolicy.MaximumAttempts, tt.stc, tt.attempts)
			}
			if want := tt.inv.Name + " at app.yaml:3:7"; o.Summary != want {
				t.Errorf("summary %q, want %q", o.Summary, want)
			}
		})
	}
}

// A call whose context ended before it returned (the worker is stopping)
// is a retryable kitsoki.lost error: its answer is not the call's.
func TestStoppedIsRetryableLost(t *testing.T) {
	if err := stopped(context.Background()); err != nil {
		t.Fatalf("a live context: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := stopped(ctx)
	ae, ok := errors.AsType[*temporal.ApplicationError](err)
	if !ok || ae.Type() != ErrTypeLost || ae.NonRetryable() || lostReason(err) != "its worker stopped during the call" {
		t.Errorf("stopped(cancelled) = %v; want a retryable %s error", err, ErrTypeLost)
	}
	if lostReason(temporal.NewNonRetryableApplicationError("x", "kitsoki.story", nil)) != "" {
		t.Error("an infrastructure failure counts as a lost call")
	}
}

// A call whose worker cannot read the session's bundle did not run: the
// activity fails with the retryable kitsoki.unavailable error, so another
// worker takes the call, and a call that no worker could run fails as a
// lost one, with the reason.
func TestUnreadableBundleIsRetryable(t *testing.T) {
	app := copyHello(t)
	ref := mustPack(t, app, mustLoad(t, app), &Blobs{Dir: t.TempDir()})
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &Activities{Stories: &Stories{Blobs: &Blobs{Dir: t.TempDir()}, BundleDir: t.TempDir()}}
	env.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	_, err := env.ExecuteActivity(InvokeActivity, InvokeInput{Story: ref, Namespace: "host.agent.decide"})
	ae, ok := errors.AsType[*temporal.ApplicationError](err)
	if !ok || ae.Type() != ErrTypeUnavailable || ae.NonRetryable() {
		t.Fatalf("error = %v; want a retryable %s error", err, ErrTypeUnavailable)
	}
	reason := lostReason(err)
	if !strings.HasPrefix(reason, "its worker could not read the session's story: story app.yaml: the session's story bundle "+ref.Bundle+": blob ") ||
		!strings.HasSuffix(reason, "blob missing; every worker and client of the cluster must share one blob directory (--blobs, $KITSOKI_BLOBS_DIR)") {
		t.Errorf("lost reason %q", reason)
	}
}
