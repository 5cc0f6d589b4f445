package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestForkCarriesTheSession forks the carry story's session after each
// of its steps: the carry query answers exactly the input a
// continue-as-new at that point goes on with (state, world, turn,
// timeouts, room history, open and kept overlays, the story reference),
// and a session started from it (a fork) takes the remaining steps as the
// local run took them, an open meta mode and a back across the fork
// included.
func TestForkCarriesTheSession(t *testing.T) {
	st, err := story.Load(filepath.Join("testdata", "carry/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref := StoryRef{Path: "carry/app.yaml", Hash: st.ContentHash}
	want := localOutcomes(t, st, carrySteps)
	in := SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1}
	for k := range carrySteps[:len(carrySteps)-1] {
		next, carried := stepAndCarry(t, in, carrySteps[k], k)
		if d := cmp.Diff(next, carried); d != "" {
			t.Fatalf("after step %d the carry query differs from the continue-as-new input (-continued +carry):\n%s", k, d)
		}
		fork := *carried
		fork.SessionID = fmt.Sprint("fork-", k)
		fork.Fork = &ForkOrigin{SessionID: "s1", Turn: carried.Carried.Turn}
		got, _, res := runCarried(t, fork, carrySteps[k+1:])
		if d := cmp.Diff(want[k+1:], got); d != "" {
			t.Errorf("the fork after step %d (-local +fork):\n%s", k, d)
		}
		if res.State != "gone" {
			t.Errorf("the fork after step %d ended in %q", k, res.State)
		}
		in = *next
	}
}

// localOutcomes runs steps in a local session of st.
func localOutcomes(t *testing.T, st *story.Story, steps []carryStep) []stepOutcome {
	t.Helper()
	cfg := carryConfig(st)
	cfg.Session = &runtime.Session{ID: "s1", Journal: true}
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sess := rt.Session()
	if _, err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var out []stepOutcome
	for _, s := range steps {
		o, err := s.local(ctx, sess)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, stepOutcome{o.Outcome, o.State, sess.Overlay(), o.Says})
	}
	return out
}

// stepAndCarry takes one step in a run started with in (ContinueAsNewAfter
// 1: the run then continues as new) and returns the continue-as-new
// input and what the carry query answered after the step.
func stepAndCarry(t *testing.T, in SessionInput, s carryStep, i int) (next, carried *SessionInput) {
	t.Helper()
	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: carryConfig}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, fmt.Sprint("u", i), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("step %d rejected: %v", i, err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("step %d: %v", i, err)
				}
			}}, s.request())
	}, time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, in)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("step %d: the run did not continue as new: %v", i, err)
	}
	next = new(SessionInput)
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, next); err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(QueryCarry)
	if err != nil {
		t.Fatalf("carry after step %d: %v", i, err)
	}
	carried = new(SessionInput)
	if err := v.Get(carried); err != nil {
		t.Fatal(err)
	}
	return next, carried
}

// TestReplayedSnapshotIsTheCarry replays the carry story's trace (every
// run's, as TraceJSONL joins them) to each turn it reached: the snapshot
// is the one the carry query answered after that turn (state, world,
// timeouts, room history, open and kept overlays), so a fork at an
// earlier turn starts where a fork at that turn would have started.
func TestReplayedSnapshotIsTheCarry(t *testing.T) {
	st, err := story.Load(filepath.Join("testdata", "carry/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref := StoryRef{Path: "carry/app.yaml", Hash: st.ContentHash}
	in := SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1}
	evs, carried, _ := tracedRuns(t, in, carrySteps[:len(carrySteps)-1], 0)
	for _, want := range carried {
		got, err := replayedSnapshot(context.Background(), st, "s1", evs, want.Turn, orchestrator.RoutingConfig{}, nil)
		if err != nil {
			t.Fatalf("turn %d: %v", want.Turn, err)
		}
		if d := cmp.Diff(want, roundTrip(t, got)); d != "" {
			t.Errorf("turn %d (-carry +replayed):\n%s", want.Turn, d)
		}
	}
}

// TestReplayedSnapshotOfAFork replays the trace of a fork, which starts
// at the fork, from the session its first run was started with (the
// carried snapshot): after each of its turns the snapshot is the one its
// carry query answered, and at the fork's own turn it is the carried one.
func TestReplayedSnapshotOfAFork(t *testing.T) {
	st, err := story.Load(filepath.Join("testdata", "carry/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref := StoryRef{Path: "carry/app.yaml", Hash: st.ContentHash}
	in := SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1}
	const k = 2 // the parent's steps before the fork
	_, carried, next := tracedRuns(t, in, carrySteps[:k], 0)
	fork := *next
	fork.SessionID = "f1"
	fork.Fork = &ForkOrigin{SessionID: "s1", Turn: next.Carried.Turn}
	evs, forkCarried, _ := tracedRuns(t, fork, carrySteps[k:len(carrySteps)-1], k)
	if len(evs) == 0 || evs[0].Turn == 0 {
		t.Fatalf("the fork's trace starts at turn 0: %+v", evs[:min(len(evs), 1)])
	}
	seedSnap := carried[len(carried)-1]
	seed := &runtime.Seed{Turn: seedSnap.Turn, Restore: func(s *orchestrator.Session) error { return restore(s, seedSnap) }}
	for _, want := range append([]*Snapshot{seedSnap}, forkCarried...) {
		got, err := replayedSnapshot(context.Background(), st, "f1", evs, want.Turn, orchestrator.RoutingConfig{}, seed)
		if err != nil {
			t.Fatalf("turn %d: %v", want.Turn, err)
		}
		if d := cmp.Diff(want, roundTrip(t, got)); d != "" {
			t.Errorf("turn %d (-carry +replayed):\n%s", want.Turn, d)
		}
	}
	// Without the seed the trace cannot be replayed: it has no turn 0.
	if _, err := replayedSnapshot(context.Background(), st, "f1", evs, forkCarried[0].Turn, orchestrator.RoutingConfig{}, nil); err == nil ||
		!strings.Contains(err.Error(), "the journal has no turn 0") {
		t.Errorf("a fork's trace replayed from turn 0: %v", err)
	}
}

// tracedRuns takes steps in session in, one run each (in continues as new
// after every step), and returns the runs' trace as TraceJSONL joins it,
// the carry query's snapshot after each step and the input the last run
// continued with. first is the first step's index, for messages.
func tracedRuns(t *testing.T, in SessionInput, steps []carryStep, first int) ([]trace.Event, []*Snapshot, *SessionInput) {
	t.Helper()
	var jsonl []byte
	var carried []*Snapshot
	for k, s := range steps {
		next, carry, text := stepCarryAndTrace(t, in, s, first+k)
		if k > 0 { // a later run's header line is dropped
			_, text, _ = strings.Cut(text, "\n")
		}
		jsonl = append(jsonl, text...)
		carried = append(carried, carry.Carried)
		in = *next
	}
	_, evs, err := trace.ReadAll(bytes.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	return evs, carried, &in
}

// stepCarryAndTrace is stepAndCarry that also returns the run's trace.
func stepCarryAndTrace(t *testing.T, in SessionInput, s carryStep, i int) (next, carried *SessionInput, jsonl string) {
	t.Helper()
	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: carryConfig}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, fmt.Sprint("u", i), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("step %d rejected: %v", i, err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("step %d: %v", i, err)
				}
			}}, s.request())
	}, time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, in)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("step %d: the run did not continue as new: %v", i, err)
	}
	next = new(SessionInput)
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, next); err != nil {
		t.Fatal(err)
	}
	for q, dst := range map[string]any{QueryCarry: &carried, QueryTraceJSONL: &jsonl} {
		v, err := env.QueryWorkflow(q)
		if err != nil {
			t.Fatalf("%s after step %d: %v", q, i, err)
		}
		if err := v.Get(dst); err != nil {
			t.Fatal(err)
		}
	}
	return next, carried, jsonl
}

// roundTrip is s as a workflow's input carries it (through the data
// converter), so it compares with what a query answered.
func roundTrip(t *testing.T, s *Snapshot) *Snapshot {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(s)
	if err != nil {
		t.Fatal(err)
	}
	out := new(Snapshot)
	if err := converter.GetDefaultDataConverter().FromPayload(p, out); err != nil {
		t.Fatal(err)
	}
	return out
}
