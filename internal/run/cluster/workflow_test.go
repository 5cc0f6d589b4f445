package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const storiesDir = "../../../stories"

func helloRef(t *testing.T) (StoryRef, *story.Story) {
	t.Helper()
	st, err := story.Load(filepath.Join(storiesDir, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, st
}

func agents(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)),
		Agents: runtime.Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}}}
}

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := loadedEnv()
	stories := &Stories{Dir: storiesDir}
	w := &Workflow{Stories: stories}
	env.RegisterWorkflowWithOptions(w.Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	a := &Activities{Stories: stories, Config: agents}
	env.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	return env
}

type step struct {
	intent string
	slots  map[string]any
}

var helloSteps = []step{{"greet", map[string]any{"name": "Ada", "style": "formal"}}, {"bye", nil}}

// sendUpdates queues the steps as intent updates, one after another, and
// records each result or rejection.
func sendUpdates(t *testing.T, env *testsuite.TestWorkflowEnvironment, steps []step, results *[]*TurnResult, rejected *[]error) {
	for i, s := range steps {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(IntentUpdate, "u"+string(rune('0'+i)), &testsuite.TestUpdateCallback{
				OnReject: func(err error) { *rejected = append(*rejected, err) },
				OnAccept: func() {},
				OnComplete: func(v any, err error) {
					if err != nil {
						t.Errorf("update %d: %v", i, err)
						return
					}
					*results = append(*results, v.(*TurnResult))
				},
			}, IntentRequest{Intent: s.intent, Slots: Value{s.slots}})
		}, time.Duration(i+1)*time.Minute)
	}
}

func localRun(t *testing.T, st *story.Story, steps []step) (*runtime.Runtime, []string) {
	t.Helper()
	cfg := agents(st)
	cfg.Session = &runtime.Session{ID: "s1", Journal: true} // as kitsoki run's durable session
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if _, err := rt.Session().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if _, err := rt.Session().Turn(context.Background(), s.intent, s.slots, ""); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, e := range rt.Memory().Events() {
		kinds = append(kinds, e.Kind)
	}
	return rt, kinds
}

func TestSessionMatchesLocalRun(t *testing.T) {
	ref, st := helloRef(t)
	local, wantKinds := localRun(t, st, helloSteps)

	env := newEnv(t)
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, helloSteps, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 0 {
		t.Fatalf("rejected: %v", rejected)
	}
	var gotKinds []string
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		gotKinds = append(gotKinds, e.Kind)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != local.Session().State() || res.Turn != 2 {
		t.Errorf("final state %q turn %d, want %q turn 2", res.State, res.Turn, local.Session().State())
	}
	if d := cmp.Diff(local.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	if d := cmp.Diff(wantKinds, gotKinds); d != "" {
		t.Errorf("trace kinds (-local +workflow):\n%s", d)
	}
	if len(results) != 2 || results[0].State != "greeted" || !results[1].Done {
		t.Errorf("turn results: %+v", results)
	}
}

func TestRejectedUpdateWritesNothing(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	var results []*TurnResult
	var rejected []error
	// bye before any greeting: the guard fails; "dance" is no intent.
	sendUpdates(t, env, []step{{"bye", nil}, {"dance", nil}, {"greet", map[string]any{"name": "Ada"}}, {"bye", nil}}, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, err := range rejected {
		msgs = append(msgs, err.Error())
	}
	want := []string{
		`GUARD_FAILED: no transition matched for intent "bye" in state "lobby" (type: GUARD_FAILED, retryable: true)`,
		`INTENT_NOT_ALLOWED_IN_STATE: intent "dance" is not allowed in state "lobby": it is not a declared intent (allowed: bye, greet) (type: INTENT_NOT_ALLOWED_IN_STATE, retryable: true)`,
	}
	if d := cmp.Diff(want, msgs); d != "" {
		t.Errorf("rejections (-want +got):\n%s", d)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	// The rejected intents took no turn: the two accepted ones are 1 and 2.
	if res.Turn != 2 || len(results) != 2 || results[0].Turn != 1 {
		t.Errorf("turn %d, results %+v", res.Turn, results)
	}
}

func TestContinueAsNewCarriesSession(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, helloSteps[:1], &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var next SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	c := next.Carried
	if c == nil || c.State != "greeted" || c.Turn != 1 || next.Story != ref {
		t.Fatalf("carried %+v story %+v", c, next.Story)
	}
	if got := c.World.Map()["greetings"]; got != int64(1) && got != 1 {
		t.Errorf("carried greetings = %#v", got)
	}

	// The next run picks the session up where the first left it.
	env2 := newEnv(t)
	results = nil
	sendUpdates(t, env2, helloSteps[1:], &results, &rejected)
	env2.ExecuteWorkflow(SessionWorkflowName, next)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env2.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Turn != 2 || res.State != "farewell" || res.World.Map()["name"] != "Ada" {
		t.Errorf("result %+v", res)
	}
}

func TestStoryHashMismatch(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	bad := ref
	bad.Hash = "sha256:0000"
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: bad, SessionID: "s1"})
	err := env.GetWorkflowError()
	want := "story hello/app.yaml: content hash is " + ref.Hash + ", but the session was started with sha256:0000: the story files changed under the session; " +
		"deploy the story the session started with to this worker's stories directory, or start a new session"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to contain %q", err, want)
	}
}

func TestValueRoundTrip(t *testing.T) {
	in := map[string]any{"i": 3, "I": int64(4), "f": 3.0, "s": "x", "b": true, "z": nil,
		"a": []any{1.5, "y"}, "m": map[string]any{"k": int64(-2)}}
	b, err := Value{in}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out Value
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out.V); d != "" {
		t.Errorf("round trip (-in +out):\n%s", d)
	}
}

func TestBackgroundInvokeRefused(t *testing.T) {
	st, err := story.Load("testdata/bg/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := loadedEnv()
	w := &Workflow{Stories: &Stories{Dir: "testdata"}}
	env.RegisterWorkflowWithOptions(w.Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: StoryRef{Path: "bg/app.yaml", Hash: st.ContentHash}, SessionID: "s1"})
	want := "app.yaml:14:23: invoke host.run: background: true: background invokes are not supported in a Temporal session yet; run this story locally (kitsoki run without --temporal) or drop background:"
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to contain %q", err, want)
	}
}
