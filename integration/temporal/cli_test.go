package temporal

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"

	"github.com/kitsoki/kitsoki/internal/cluster"
	"github.com/kitsoki/kitsoki/internal/story"
)

// TestWorkerProcessRunsASession starts `kitsoki worker` as a child
// process and runs the hello story on it through the SDK client.
func TestWorkerProcessRunsASession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stories, err := filepath.Abs(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	queue := "q-" + t.Name()
	startWorker(t, t.TempDir(), "--stories", stories, "--task-queue", queue)

	c, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := story.Load(filepath.Join(storiesDir, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "worker-proc-1", TaskQueue: queue},
		cluster.SessionWorkflowName, cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: "worker-proc-1"})
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
	if g := res.World.Map()["greetings"]; g != int64(1) && g != 1 {
		t.Errorf("world.greetings = %v (%T), want 1", g, g)
	}
}
