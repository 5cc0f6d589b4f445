package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// router answers the router's decide: greet with the last word as the
// name when the text says hello, else none.
type router struct{}

func (router) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	prompt, _ := c.Request.With["prompt"].(string)
	_, user, _ := strings.Cut(prompt, "User: ")
	words := strings.Fields(user)
	ans := map[string]any{"intent": "none", "confidence": 0.9}
	if len(words) > 0 && strings.Contains(user, "hello") {
		ans = map[string]any{"intent": "greet", "slots": map[string]any{"name": words[len(words)-1]}, "confidence": 0.9}
	}
	sub, _ := json.Marshal(ans)
	return &agent.AskResponse{Submission: sub}, nil
}

func (router) Close() error { return nil }

func routerConfig(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)),
		Agents: runtime.Agents{Override: map[string]agent.Agent{"agent.router": router{}}}}
}

// TestFreeTextIsRoutedAsLocally: updates with Input and no intent take
// the turn a local run's free text takes: the router agent's call (an
// activity), a no-match rejection traced as a turn, the exact tier.
func TestFreeTextIsRoutedAsLocally(t *testing.T) {
	st, err := story.Load("testdata/freetext/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ref := StoryRef{Path: "freetext/app.yaml", Hash: st.ContentHash}
	lines := []string{"what is this place", "say hello to Ada", "bye"}

	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: routerConfig}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
	var results []*TurnResult
	for i, line := range lines {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(IntentUpdate, "say"+string(rune('0'+i)), &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("%q rejected: %v", line, err) }, OnAccept: func() {},
				OnComplete: func(v any, err error) {
					if err != nil {
						t.Errorf("%q: %v", line, err)
						return
					}
					results = append(results, v.(*TurnResult))
				}}, IntentRequest{Input: line})
		}, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}

	cfg := routerConfig(st)
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
	var want []string
	for _, line := range lines {
		out, err := rt.Session().Say(ctx, line)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, out.Outcome+" "+out.State)
	}
	var got []string
	for _, r := range results {
		got = append(got, r.Outcome+" "+r.State)
	}
	if d := cmp.Diff([]string{"rejected lobby", "transitioned greeted", "transitioned gone"}, want); d != "" {
		t.Fatalf("local outcomes (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outcomes (-local +workflow):\n%s", d)
	}
	if d := cmp.Diff(shapes(t, rt.Memory().Events()), shapes(t, traceOf(t, env))); d != "" {
		t.Errorf("trace (-local +workflow):\n%s", d)
	}
}

// TestFreeTextRoutingFromTheInput: the session input's routing (here a
// confidence bar above the router's 0.9) decides as --min-confidence does
// locally: the routed greeting is refused as NO_MATCH.
func TestFreeTextRoutingFromTheInput(t *testing.T) {
	st, err := story.Load("testdata/freetext/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.RegisterActivityWithOptions((&Activities{Stories: stories, Config: routerConfig}).Invoke, activity.RegisterOptions{Name: InvokeActivity})
	var got *TurnResult
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "say", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("rejected: %v", err) }, OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("say: %v", err)
				}
				got, _ = v.(*TurnResult)
			}}, IntentRequest{Input: "say hello to Ada"})
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.CancelWorkflow() }, 2*time.Minute)
	bar := 0.95
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: StoryRef{Path: "freetext/app.yaml", Hash: st.ContentHash}, SessionID: "s1",
		Routing: &orchestrator.RoutingConfig{MinConfidence: &bar}})
	if got == nil || got.Outcome != "rejected" || got.Rejection == nil || got.Rejection.Code != orchestrator.CodeNoMatch {
		t.Errorf("turn %+v, want a NO_MATCH rejection", got)
	}
}
