package cluster

import (
	"context"
	"encoding/json"
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

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// recallAgent answers an overlay's converse with what it was told and how
// many exchanges of the conversation its prompt carries, so an answer
// shows whether the transcript survived the handover. Stateless: every
// activity opens (and closes) its own host.
type recallAgent struct{}

func (recallAgent) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	prompt, _ := c.Request.With["prompt"].(string)
	if prompt == "" {
		prompt = c.Request.Prompt
	}
	_, user, _ := strings.Cut(prompt, "[user]\n")
	user, _, _ = strings.Cut(user, "\n[/user]")
	ans, _ := json.Marshal(map[string]any{
		"answer": fmt.Sprintf("%q after %d earlier exchanges", user, strings.Count(prompt, "\nuser: "))})
	return &agent.AskResponse{Submission: ans}, nil
}

func (recallAgent) Close() error { return nil }

func carryConfig(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)),
		Agents: runtime.Agents{Builtin: recallAgent{}}}
}

// carryStep is one input: a typed intent, free text, or a back.
type carryStep struct {
	intent, text string
	back         bool
}

func (s carryStep) request() IntentRequest {
	return IntentRequest{Intent: s.intent, Input: s.text, Back: s.back}
}

func (s carryStep) local(ctx context.Context, sess *orchestrator.Session) (*orchestrator.Outcome, error) {
	switch {
	case s.back:
		return sess.Back(ctx)
	case s.text != "":
		return sess.Say(ctx, s.text)
	}
	return sess.Turn(ctx, s.intent, nil, "")
}

// carrySteps cross continue-as-new inside an open meta mode, with a
// persistent mode's conversation kept closed, inside off_path, and with
// the room history popped by back in a later run than the one that
// pushed it.
var carrySteps = []carryStep{
	{intent: "go"},           // hall → library, history [hall]
	{text: "/meta"},          // opens meta mode story
	{text: "where am I"},     // answered in the next run: the open mode is carried
	{text: "/onpath"},        // closes it, kept
	{intent: "go"},           // library → garden, history [hall library]
	{back: true},             // garden → library, popped from the carried history
	{text: "/meta"},          // reopens the kept conversation
	{text: "what did I ask"}, // the agent sees the carried exchange
	{text: "/onpath"},        //
	{text: "/freeform"},      // off_path open
	{text: "hi"},             //
	{text: "/onpath"},        // off_path closed
	{back: true},             // library → hall
	{intent: "go"},           // hall → library
	{intent: "go"},           // library → garden
	{intent: "leave"},        // gone (terminal)
}

type stepOutcome struct {
	Outcome, State, Overlay string
	Says                    []string
}

// carryPar's steps enter a parallel state, change both regions (an
// emitted intent), go back to the configuration before, and leave: every
// configuration and the room history holding them cross continue-as-new.
var carryParSteps = []carryStep{{intent: "enter"}, {intent: "rain"}, {back: true}, {intent: "rain"}, {intent: "leave"}}

// TestContinueAsNewCarriesOverlayAndHistory: with ContinueAsNewAfter 1
// every turn runs in a run of its own, so every overlay, kept
// conversation, parallel configuration and room history crosses a
// continue-as-new; the outcomes, the trace (all runs, in order) and the
// final world are a local run's.
func TestContinueAsNewCarriesOverlayAndHistory(t *testing.T) {
	tests := []struct {
		story string
		steps []carryStep
		check func(t *testing.T, want []stepOutcome)
	}{
		{"carry/app.yaml", carrySteps, func(t *testing.T, want []stepOutcome) {
			if got := want[7].Says; len(got) != 1 || got[0] != `"what did I ask" after 1 earlier exchanges` {
				t.Fatalf("the local run's reopened mode does not recall its conversation: %q", got)
			}
		}},
		{"carrypar/app.yaml", carryParSteps, func(t *testing.T, want []stepOutcome) {
			if want[2].State != "clock#clock.calendar.day1|clock.weather.dry" {
				t.Fatalf("the local back went to %q, want the configuration entered first", want[2].State)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.story, func(t *testing.T) {
			st, err := story.Load(filepath.Join("testdata", tc.story))
			if err != nil {
				t.Fatal(err)
			}
			ref := StoryRef{Path: tc.story, Hash: st.ContentHash}

			cfg := carryConfig(st)
			cfg.Session = &runtime.Session{ID: "s1", Journal: true} // as kitsoki run's durable session
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
			var want []stepOutcome
			for _, s := range tc.steps {
				out, err := s.local(ctx, sess)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, stepOutcome{out.Outcome, out.State, sess.Overlay(), out.Says})
			}
			tc.check(t, want)

			got, evs, res := runCarried(t, SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1}, tc.steps)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("outcomes (-local +workflow):\n%s", d)
			}
			if d := cmp.Diff(shapes(t, rt.Memory().Events()), evs); d != "" {
				t.Errorf("trace (-local +workflow):\n%s", d)
			}
			if res.State != sess.State() || res.Turn != sess.TurnNumber() {
				t.Errorf("final state %q turn %d, want %q turn %d", res.State, res.Turn, sess.State(), sess.TurnNumber())
			}
			if d := cmp.Diff(sess.World(), res.World.Map()); d != "" {
				t.Errorf("final world (-local +workflow):\n%s", d)
			}
		})
	}
}

// runCarried runs the session one step per run of the workflow (in
// ContinueAsNewAfter 1), each run on a test environment of its own
// started with the input the previous run continued with, and returns
// each step's outcome, the trace of all runs and the session's result.
func runCarried(t *testing.T, in SessionInput, steps []carryStep) ([]stepOutcome, []eventShape, SessionResult) {
	t.Helper()
	var got []stepOutcome
	var evs []eventShape
	for i := 0; ; i++ {
		if i > len(steps) {
			t.Fatalf("the session did not end after %d runs", i)
		}
		env := loadedEnv()
		stories := &Stories{Dir: "testdata"}
		env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
		env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: carryConfig}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
		var last *TurnResult
		if i < len(steps) {
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(IntentUpdate, fmt.Sprint("u", i), &testsuite.TestUpdateCallback{
					OnReject: func(err error) { t.Errorf("step %d rejected: %v", i, err) }, OnAccept: func() {},
					OnComplete: func(v any, err error) {
						if err != nil {
							t.Errorf("step %d: %v", i, err)
							return
						}
						last = v.(*TurnResult)
					}}, steps[i].request())
			}, time.Minute)
		}
		env.ExecuteWorkflow(SessionWorkflowName, in)
		evs = append(evs, shapes(t, traceOf(t, env))...)
		if last != nil {
			v, err := env.QueryWorkflow(QueryStatus)
			var status SessionStatus
			if err == nil {
				err = v.Get(&status)
			}
			if err != nil {
				t.Fatalf("status after step %d: %v", i, err)
			}
			got = append(got, stepOutcome{last.Outcome, last.State, status.Overlay, last.Says})
		}
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			var next SessionInput
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
				t.Fatal(err)
			}
			in = next
			continue
		}
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		var res SessionResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return got, evs, res
	}
}

// TestBackWithNoHistoryIsRejected: a back update on a session whose room
// history is empty is refused by the validator with ErrNoHistory's text
// (a local :back prints it and takes no turn), and the session goes on.
func TestBackWithNoHistoryIsRejected(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	var rejected []string
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "back", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejected = append(rejected, err.Error()) }, OnAccept: func() {},
			OnComplete: func(any, error) { t.Error("back with no history took a turn") }}, IntentRequest{Back: true})
	}, time.Minute)
	var results []*TurnResult
	var refused []error
	sendUpdates(t, env, helloSteps, &results, &refused)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{orchestrator.ErrNoHistory.Error() + " (type: NO_HISTORY, retryable: true)"}
	if d := cmp.Diff(want, rejected); d != "" {
		t.Errorf("rejections (-want +got):\n%s", d)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Turn != 2 || len(refused) != 0 {
		t.Errorf("turn %d (want 2), refused %v", res.Turn, refused)
	}
}
