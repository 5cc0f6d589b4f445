package temporal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// The floor of a turn on the cluster: a bare SDK workflow whose update
// handler runs one activity (that does nothing) and returns, the least a
// turn that makes one call can cost on Temporal.
const (
	floorWorkflow = "bench.floor"
	floorActivity = "bench.noop"
	floorUpdate   = "turn"
)

func floorNoop(context.Context) (string, error) { return "ok", nil }

// semAgentsFor is semAgents as a worker's per-session configuration.
func semAgentsFor(st *story.Story, _ string) runtime.Config { return semAgents(st) }

func floorSession(ctx workflow.Context) error {
	ao := workflow.ActivityOptions{StartToCloseTimeout: time.Minute}
	if err := workflow.SetUpdateHandler(ctx, floorUpdate, func(ctx workflow.Context, call bool) (string, error) {
		if !call {
			return "no call", nil
		}
		var out string
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), floorActivity).Get(ctx, &out)
		return out, err
	}); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// BenchmarkTurnVsFloor (issue 32): one op is two turns of the hello story
// on the cluster (greet, whose agent call is a kitsoki.invoke activity the
// in-process demo greeter answers at once, then again, which calls
// nothing), each an intent update waited for to completion, against the
// floor doing the same: two updates, one of which runs one activity. Both
// run in this process against the dev server, on workers of their own,
// in turns (kitsoki, floor, kitsoki, floor) so that the machine's load
// falls on both alike; the ratio is kitsoki's ns/op over the floor's.
// A session continues as new every 200 turns (DefaultContinueAsNewAfter),
// as in production, so that cost is in the figure too.
func BenchmarkTurnVsFloor(b *testing.B) {
	ctx := context.Background()
	c, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	fw := worker.New(c, "bench-floor", worker.Options{})
	fw.RegisterWorkflowWithOptions(floorSession, workflow.RegisterOptions{Name: floorWorkflow})
	fw.RegisterActivityWithOptions(floorNoop, activity.RegisterOptions{Name: floorActivity})
	if err := fw.Start(); err != nil {
		b.Fatal(err)
	}
	defer fw.Stop()
	stories, err := filepath.Abs(storiesDir)
	if err != nil {
		b.Fatal(err)
	}
	st, err := story.Load(filepath.Join(stories, "hello/app.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	kw, err := cluster.NewWorker(c, cluster.WorkerOptions{TaskQueue: "bench-kitsoki", StoriesDir: stories, Config: semAgentsFor})
	if err != nil {
		b.Fatal(err)
	}
	if err := kw.Start(); err != nil {
		b.Fatal(err)
	}
	defer kw.Stop()

	n := 0
	send := func(b *testing.B, id, name string, arg any) {
		if _, err := update(ctx, c, id, name, arg); err != nil {
			b.Fatalf("update %s of %s: %v", name, id, err)
		}
	}
	kitsoki := func(b *testing.B) {
		n++
		id := fmt.Sprintf("bench-k-%d-%d", time.Now().UnixNano(), n)
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "bench-kitsoki"}, cluster.SessionWorkflowName,
			cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: id}); err != nil {
			b.Fatal(err)
		}
		defer c.TerminateWorkflow(ctx, id, "", "benchmark done")
		send(b, id, cluster.AttachUpdate, nil)
		b.ResetTimer()
		for b.Loop() {
			send(b, id, cluster.IntentUpdate, cluster.IntentRequest{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}})
			send(b, id, cluster.IntentUpdate, cluster.IntentRequest{Intent: "again"})
		}
	}
	floor := func(b *testing.B) {
		n++
		id := fmt.Sprintf("bench-f-%d-%d", time.Now().UnixNano(), n)
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "bench-floor"}, floorWorkflow); err != nil {
			b.Fatal(err)
		}
		defer c.TerminateWorkflow(ctx, id, "", "benchmark done")
		send(b, id, floorUpdate, false)
		b.ResetTimer()
		for b.Loop() {
			send(b, id, floorUpdate, true)
			send(b, id, floorUpdate, false)
		}
	}
	for i := range 2 {
		b.Run(fmt.Sprintf("kitsoki-%d", i), kitsoki)
		b.Run(fmt.Sprintf("floor-%d", i), floor)
	}
}
