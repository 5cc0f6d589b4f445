package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// payloads lists every Payload in a history, wherever an event holds one.
func payloads(m protoreflect.Message, out *[]*commonpb.Payload) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		*out = append(*out, p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				payloads(v.List().Get(i).Message(), out)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				payloads(mv.Message(), out)
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			payloads(v.Message(), out)
		}
		return true
	})
}

// TestLargePayloadsTravelAsBlobs runs the hello session with a name over
// the default threshold (256 KiB) on the dev server: every payload in its
// history stays under the threshold, the large ones are blob references,
// the session ends with the long name in its world, the history replays
// with the blob store, and without its blobs the result names the
// missing digest.
func TestLargePayloadsTravelAsBlobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	blobs := &cluster.Blobs{Dir: t.TempDir()}
	c := semDial(t, ctx, client.Options{DataConverter: blobs.DataConverter()})
	st, err := story.Load(filepath.Join(storiesDir, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	queue := "blobs"
	// -race makes a workflow task with 300 KiB values slower than the
	// deadlock detector's default 1 s.
	semWorker(t, c, queue, storiesDir, semAgents, worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	name := strings.Repeat("Ada ", cluster.DefaultBlobThreshold/4+1024)
	id := "blobs-1"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, cluster.SessionWorkflowName,
		cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	semUpdate(t, ctx, c, id, cluster.IntentRequest{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": name, "style": "formal"}}})
	semUpdate(t, ctx, c, id, cluster.IntentRequest{Intent: "bye"})
	var res cluster.SessionResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.World.Map()["name"] != name {
		t.Fatalf("world.name is not the long name (%d bytes)", len(name))
	}

	hist := semHistory(t, ctx, c, id, run.GetRunID())
	var ps []*commonpb.Payload
	payloads(hist.ProtoReflect(), &ps)
	refs := 0
	for _, p := range ps {
		if n := proto.Size(p); n > cluster.DefaultBlobThreshold {
			t.Errorf("a %d-byte payload (%s) is in the history", n, p.GetMetadata()[converter.MetadataEncoding])
		}
		if string(p.GetMetadata()[converter.MetadataEncoding]) == cluster.BlobEncoding {
			refs++
		}
	}
	// The update's slots, the call's input and answer, the session's result.
	if refs < 4 {
		t.Errorf("%d blob references in the history, want at least 4", refs)
	}

	// The replay reads the blobs back (the large payloads of the history
	// are references only); deadlock detection off as for the worker.
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: blobs.DataConverter(),
		DisableDeadlockDetection: true})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions((&cluster.Workflow{Stories: &cluster.Stories{Dir: storiesDir}}).Session, workflow.RegisterOptions{Name: cluster.SessionWorkflowName})
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Errorf("replay with the blob store: %v", err)
	}

	// A client whose blob directory lacks the blobs cannot read the result.
	c2 := semDial(t, ctx, client.Options{DataConverter: (&cluster.Blobs{Dir: t.TempDir()}).DataConverter()})
	err = c2.GetWorkflow(ctx, id, run.GetRunID()).Get(ctx, &res)
	if err == nil || !strings.Contains(err.Error(), ": blob missing; every worker and client of the cluster must share one blob directory") ||
		!strings.Contains(err.Error(), "blob sha256:") {
		t.Errorf("result without the blobs: %v\nwant the missing-blob error naming the digest", err)
	}
	if _, err := os.Stat(blobs.Dir); err != nil {
		t.Fatal(err)
	}
}
