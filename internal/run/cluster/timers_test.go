package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

func timeoutEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, StoryRef, *story.Story) {
	t.Helper()
	st, err := story.Load("testdata/timeout/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: agents}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
	return env, StoryRef{Path: "timeout/app.yaml", Hash: st.ContentHash}, st
}

func traceOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) []trace.Event {
	t.Helper()
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// eventShape is what a workflow trace and a local one must share:
// everything but the timestamps.
type eventShape struct {
	Turn    int64
	Seq     int
	Kind    string
	Payload map[string]any
}

// shapes normalises payloads through JSON, as the trace query returns
// them.
func shapes(t *testing.T, evs []trace.Event) []eventShape {
	t.Helper()
	out := make([]eventShape, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		out[i] = eventShape{e.Turn, e.Seq, e.Kind, p}
	}
	return out
}

// TestTimeoutFiresOnAWorkflowTimer: nobody sends an intent; the state's
// 10m timeout fires on a workflow timer (skipped by the test suite) and
// takes the turn a local run takes when its clock reaches 10m.
func TestTimeoutFiresOnAWorkflowTimer(t *testing.T) {
	env, ref, st := timeoutEnv(t)
	pokeAt := 3 * time.Minute
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "poke", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("poke rejected: %v", err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("poke: %v", err)
				}
			}}, IntentRequest{Intent: "poke"})
	}, pokeAt)
	start := env.Now()
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != "gone" || res.Turn != 2 {
		t.Errorf("result state %q turn %d, want gone at turn 2 (the poke, then the timeout)", res.State, res.Turn)
	}
	// "." does not re-enter: the timer armed at the start runs on.
	if got := env.Now().Sub(start); got != 10*time.Minute {
		t.Errorf("the session ended %v after it started, want 10m", got)
	}

	// The local run of the same inputs: the poke at 3m, a Tick at 10m.
	clk := clock.NewFake(start)
	cfg := agents(st)
	cfg.Clock = clk
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
	clk.Advance(pokeAt)
	if _, err := rt.Session().Turn(ctx, "poke", nil, ""); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10*time.Minute - pokeAt)
	out, err := rt.Session().Tick(ctx)
	if err != nil || out == nil || out.State != "gone" {
		t.Fatalf("local Tick: %+v, %v", out, err)
	}
	if d := cmp.Diff(rt.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	if d := cmp.Diff(shapes(t, rt.Memory().Events()), shapes(t, traceOf(t, env))); d != "" {
		t.Errorf("trace (-local +workflow):\n%s", d)
	}
}

// TestTimeoutRearmsOnEntry: leaving the state drops its timer; the next
// state's own timeout (1h) is the one that fires.
func TestTimeoutRearmsOnEntry(t *testing.T) {
	env, ref, _ := timeoutEnv(t)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "go", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("go rejected: %v", err) }, OnAccept: func() {},
			OnComplete: func(any, error) {}}, IntentRequest{Intent: "go"})
	}, 9*time.Minute)
	start := env.Now()
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := env.Now().Sub(start); got != 9*time.Minute+time.Hour {
		t.Errorf("the session ended %v after it started, want 1h9m", got)
	}
	var timeouts []string
	for _, e := range traceOf(t, env) {
		if e.Kind == "machine.timeout" {
			timeouts = append(timeouts, e.Payload["state"].(string)+" after "+e.Payload["after"].(string))
		}
	}
	if d := cmp.Diff([]string{"room after 1h0m0s"}, timeouts); d != "" {
		t.Errorf("timeouts fired (-want +got):\n%s", d)
	}
}

// TestContinueAsNewCarriesTimeouts: the run continues as new after the
// poke with the 10m timeout armed; the next run fires it at the same
// workflow time, not 10m after it started.
func TestContinueAsNewCarriesTimeouts(t *testing.T) {
	env, ref, _ := timeoutEnv(t)
	start := env.Now()
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "poke", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("poke rejected: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			IntentRequest{Intent: "poke"})
	}, 3*time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var next SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	want := []orchestrator.ArmedTimeout{{State: "waiting", Due: start.Add(10 * time.Minute)}}
	if next.Carried == nil {
		t.Fatal("nothing carried")
	}
	if d := cmp.Diff(want, next.Carried.Timeouts, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Fatalf("carried timeouts (-want +got):\n%s", d)
	}

	env2, _, _ := timeoutEnv(t)
	env2.SetStartTime(start.Add(3 * time.Minute))
	env2.ExecuteWorkflow(SessionWorkflowName, next)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env2.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != "gone" || res.Turn != 2 {
		t.Errorf("result %q turn %d, want gone at turn 2", res.State, res.Turn)
	}
	if got := env2.Now().Sub(start); got != 10*time.Minute {
		t.Errorf("the continued run ended %v after the session started, want 10m", got)
	}
}
