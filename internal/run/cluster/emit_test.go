package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// emitter is an agent that, like one calling the emit_intent MCP tool,
// emits two intents on its run before it answers.
type emitter struct{}

func (emitter) Ask(ctx context.Context, c *agent.Call) (*agent.AskResponse, error) {
	if c.Run == nil || c.Run.Live == nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "the call has no run")
	}
	if err := c.Run.Live.EmitIntent(ctx, "noted", map[string]any{"note": "half way"}); err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "%v", err)
	}
	if err := c.Run.Live.EmitIntent(ctx, "finish", nil); err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "%v", err)
	}
	sub, _ := json.Marshal(map[string]any{"ok": true})
	return &agent.AskResponse{Submission: sub}, nil
}

func (emitter) Close() error { return nil }

func emitConfig(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)),
		Agents: runtime.Agents{Override: map[string]agent.Agent{"agent.worker": emitter{}}}}
}

// TestEmitIntentIsASignal: the agent's emit_intent reaches the workflow
// as emit_intent signals, which fire in order once the call settles, as
// in a local run: the same final state, world and trace. A signal of
// another attempt of the call is dropped (had it fired, finish would come
// before noted and the note would be empty).
func TestEmitIntentIsASignal(t *testing.T) {
	st, err := story.Load("testdata/emit/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ref := StoryRef{Path: "emit/app.yaml", Hash: st.ContentHash}
	env := loadedEnv()
	stories := &Stories{Dir: "testdata"}
	env.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	var signals []EmitSignal
	acts := &Activities{Stories: stories, Config: emitConfig,
		Signal: func(_ context.Context, _, _ string, sig EmitSignal) error {
			if len(signals) == 0 {
				// What an earlier attempt of the call, lost with its
				// worker, sent: dropped, not fired.
				stale := sig
				stale.Attempt, stale.Intent = sig.Attempt+7, "finish"
				env.SignalWorkflow(EmitIntentSignal, stale)
			}
			signals = append(signals, sig)
			env.SignalWorkflow(EmitIntentSignal, sig)
			return nil
		}}
	env.RegisterActivityWithOptions(acts.Invoke, activity.RegisterOptions{Name: InvokeActivity})
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, []step{{"start", nil}}, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(signals) != 2 || signals[0].Intent != "noted" || signals[1].N != 1 {
		t.Errorf("signals sent: %+v", signals)
	}

	cfg := emitConfig(st)
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
	out, err := rt.Session().Turn(ctx, "start", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.State != "done" || res.State != "done" || res.Turn != 1 {
		t.Fatalf("local state %q; workflow state %q turn %d; want done at turn 1", out.State, res.State, res.Turn)
	}
	if len(results) != 1 || results[0].View != "done: half way" {
		t.Errorf("turn results %+v", results)
	}
	if d := cmp.Diff(rt.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	if d := cmp.Diff(shapes(t, rt.Memory().Events()), shapes(t, traceOf(t, env))); d != "" {
		t.Errorf("trace (-local +workflow):\n%s", d)
	}
}

// TestRemoteRunActions: on a worker, the run actions other than
// emit_intent act on state the workflow holds and are refused by name.
func TestRemoteRunActions(t *testing.T) {
	l := &remoteLive{world: map[string]any{"k": "v"}, signal: func(context.Context, string, string, EmitSignal) error { return nil }}
	ctx := context.Background()
	_, askErr := l.AskOperator(ctx, "q?")
	_, parentErr := l.AskParent(ctx, "q?")
	got := []string{askErr.Error(), parentErr.Error(), l.SetTitle(ctx, "t").Error(), l.CompleteStep(ctx, "s").Error(),
		l.EmitIntent(ctx, " ", nil).Error()}
	want := []string{
		"ask the operator: not available to an agent call of a Temporal session yet",
		"this run has no parent run",
		"set the title: not available to an agent call of a Temporal session yet",
		"complete a step: not available to an agent call of a Temporal session yet",
		"the intent name is empty",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("refusals (-want +got):\n%s", d)
	}
	if l.emitted() != 0 || l.World()["k"] != "v" {
		t.Errorf("emitted %d, world %v", l.emitted(), l.World())
	}
}
