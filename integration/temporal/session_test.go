package temporal

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const storiesDir = "../../stories"

// TestHelloSessionOnARealServer runs the bundled hello story as a session
// workflow on the dev server, its calls answered by an in-process worker,
// and checks the turns and the final world.
func TestHelloSessionOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	st, err := story.Load(filepath.Join(storiesDir, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	queue := "hello-" + t.Name()
	stories := &cluster.Stories{Dir: storiesDir}
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions((&cluster.Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: cluster.SessionWorkflowName})
	acts := &cluster.Activities{Stories: stories, Config: func(*story.Story) runtime.Config {
		return runtime.Config{IgnorePins: true, Agents: runtime.Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}}}
	}}
	w.RegisterActivityWithOptions(acts.Invoke, activity.RegisterOptions{Name: cluster.InvokeActivity})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	driveHello(ctx, t, c, queue, "hello-1", st)
}

// driveHello starts the hello story as session id on queue, greets Ada,
// says bye, and checks each turn's state and the final world.
func driveHello(ctx context.Context, t *testing.T, c client.Client, queue, id string, st *story.Story) {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		cluster.SessionWorkflowName, cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, req := range []cluster.IntentRequest{
		{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada", "style": "formal"}}},
		{Intent: "bye"},
	} {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: cluster.IntentUpdate,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			t.Fatalf("update %s: %v", req.Intent, err)
		}
		var tr cluster.TurnResult
		if err := h.Get(ctx, &tr); err != nil {
			t.Fatalf("update %s: %v", req.Intent, err)
		}
		states = append(states, tr.State)
	}
	var res cluster.SessionResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"greeted", "farewell"}, states); d != "" {
		t.Errorf("states after each turn (-want +got):\n%s", d)
	}
	if res.State != "farewell" {
		t.Errorf("final state %q, want farewell", res.State)
	}
	if g := res.World.Map()["greetings"]; g != int64(1) && g != 1 {
		t.Errorf("world.greetings = %v (%T), want 1", g, g)
	}
}
