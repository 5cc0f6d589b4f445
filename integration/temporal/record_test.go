package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// EnvRecordHistories, set to 1, makes TestRecordedHistories write the
// histories it records into internal/run/cluster/testdata/histories (the
// replay tests of the main module read them); otherwise it checks that
// the committed ones are still what the workflow produces.
const EnvRecordHistories = "KITSOKI_RECORD_HISTORIES"

const (
	historiesDir    = "../../internal/run/cluster/testdata/histories"
	clusterTestdata = "../../internal/run/cluster/testdata"
)

// recording is one session recorded from the dev server.
type recording struct {
	name  string // the history file's name (without .json) and workflow id
	dir   string // the stories directory
	path  string // the story, relative to dir
	steps []cluster.IntentRequest
	// bundle runs the story from its bundle (cluster.PackStory), kept in
	// histories/blobs for the replay test.
	bundle bool
}

var recordings = []recording{
	{name: "hello", dir: storiesDir, path: "hello/app.yaml", steps: []cluster.IntentRequest{
		{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada", "style": "formal"}}}, {Intent: "bye"}}},
	{name: "freetext", dir: clusterTestdata, path: "freetext/app.yaml", steps: []cluster.IntentRequest{
		{Input: "what is this place"}, {Input: "say hello to Ada"}, {Input: "bye"}}},
	{name: "emit", dir: clusterTestdata, path: "emit/app.yaml", steps: []cluster.IntentRequest{{Intent: "start"}}},
	// No intent: the state's 1s timeout ends the session on a workflow timer.
	{name: "timer", dir: clusterTestdata, path: "timer/app.yaml"},
	// The story travels as a bundle (issue 32): the input names its digest.
	{name: "bundle", dir: storiesDir, path: "hello/app.yaml", bundle: true, steps: []cluster.IntentRequest{
		{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}}, {Intent: "bye"}}},
}

// TestRecordedHistories runs each recording's session on the dev server
// and compares its history with the committed one (event types, activity
// and update names, timer durations, the session's result), or writes it
// when KITSOKI_RECORD_HISTORIES=1.
func TestRecordedHistories(t *testing.T) {
	record := os.Getenv(EnvRecordHistories) == "1"
	for _, r := range recordings {
		t.Run(r.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := semDial(t, ctx, client.Options{})
			st, err := story.Load(filepath.Join(r.dir, r.path))
			if err != nil {
				t.Fatal(err)
			}
			queue := "record-" + r.name
			stories := &cluster.Stories{Dir: r.dir}
			ref := cluster.StoryRef{Path: r.path, Hash: st.ContentHash}
			if r.bundle {
				// Recorded, the bundle goes where the replay test reads it;
				// checked, to a directory of the test's own.
				stories.Blobs, stories.BundleDir = &cluster.Blobs{Dir: t.TempDir()}, t.TempDir()
				if record {
					stories.Blobs.Dir = filepath.Join(historiesDir, "blobs")
				}
				if ref, err = cluster.PackStory(filepath.Join(r.dir, r.path), st, stories.Blobs, ""); err != nil {
					t.Fatal(err)
				}
			}
			semWorkerStories(t, c, queue, stories, semAgents)
			id := "record-" + r.name
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, cluster.SessionWorkflowName,
				cluster.SessionInput{Story: ref, SessionID: id})
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range r.steps {
				semUpdate(t, ctx, c, id, req)
			}
			var res cluster.SessionResult
			if err := run.Get(ctx, &res); err != nil {
				t.Fatal(err)
			}
			hist := semHistory(t, ctx, c, id, run.GetRunID())
			file := filepath.Join(historiesDir, r.name+".json")
			if record {
				b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: record the histories with %s=1 make test-temporal", err, EnvRecordHistories)
			}
			var want historypb.History
			if err := protojson.Unmarshal(data, &want); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if d := cmp.Diff(historyShape(&want), historyShape(hist)); d != "" {
				t.Errorf("the workflow's history differs from %s (-committed +now); if the change is meant, re-record with %s=1 and see docs/temporal.md (Replay and versioning):\n%s",
					file, EnvRecordHistories, d)
			}
		})
	}
}

// historyShape is what a recorded history must keep: each event's type
// with its activity type, timer duration, update or signal name, and the
// session's result. Workflow task events and activity starts are left
// out: where the server cuts workflow tasks depends on timing.
func historyShape(h *historypb.History) []string {
	var out []string
	for _, e := range h.GetEvents() {
		line := e.GetEventType().String()
		if strings.HasPrefix(line, "WorkflowTask") || line == "ActivityTaskStarted" {
			continue
		}
		switch {
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			line += " " + e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case e.GetTimerStartedEventAttributes() != nil:
			line += " " + e.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String()
		case e.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
			line += " " + e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()
		case e.GetWorkflowExecutionSignaledEventAttributes() != nil:
			line += " " + e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName()
		case e.GetWorkflowExecutionCompletedEventAttributes() != nil:
			for _, p := range e.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads() {
				line += " " + string(p.GetData())
			}
		}
		out = append(out, line)
	}
	return out
}

// semDial connects to the dev server.
func semDial(t *testing.T, ctx context.Context, o client.Options) client.Client {
	t.Helper()
	o.HostPort, o.Logger = server.Addr, quiet{}
	c, err := client.DialContext(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// semWorker starts an in-process worker on queue for the stories in dir.
func semWorker(t *testing.T, c client.Client, queue, dir string, cfg func(*story.Story) runtime.Config, opts ...worker.Options) {
	t.Helper()
	semWorkerStories(t, c, queue, &cluster.Stories{Dir: dir}, cfg, opts...)
}

// semWorkerStories starts an in-process worker on queue for stories.
func semWorkerStories(t *testing.T, c client.Client, queue string, stories *cluster.Stories, cfg func(*story.Story) runtime.Config, opts ...worker.Options) {
	t.Helper()
	var o worker.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	w := worker.New(c, queue, o)
	w.RegisterWorkflowWithOptions((&cluster.Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: cluster.SessionWorkflowName})
	w.RegisterActivityWithOptions((&cluster.Activities{Stories: stories, Config: cfg}).Invoke, activity.RegisterOptions{Name: cluster.InvokeActivity})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// semAgents answers the recorded stories' agents: the demo greeter, a
// router, and an agent that emits two intents.
func semAgents(*story.Story) runtime.Config {
	return runtime.Config{IgnorePins: true, Agents: runtime.Agents{Override: map[string]agent.Agent{
		demo.Alias: demo.Greeter{}, "agent.router": semRouter{}, "agent.worker": semEmitter{}}}}
}

// semUpdate sends one intent update and waits for its turn.
func semUpdate(t *testing.T, ctx context.Context, c client.Client, id string, req cluster.IntentRequest) *cluster.TurnResult {
	t.Helper()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: cluster.IntentUpdate,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatalf("update %+v: %v", req, err)
	}
	var tr cluster.TurnResult
	if err := h.Get(ctx, &tr); err != nil {
		t.Fatalf("update %+v: %v", req, err)
	}
	return &tr
}

// semHistory fetches a run's whole history.
func semHistory(t *testing.T, ctx context.Context, c client.Client, id, runID string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	return h
}

// semRouter routes "… hello … NAME" to greet name=NAME, else none.
type semRouter struct{}

func (semRouter) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
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

func (semRouter) Close() error { return nil }

// semEmitter emits noted{note} and finish on its run, then answers.
type semEmitter struct{}

func (semEmitter) Ask(ctx context.Context, c *agent.Call) (*agent.AskResponse, error) {
	if c.Run == nil || c.Run.Live == nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "the call has no run")
	}
	for _, e := range []struct {
		name  string
		slots map[string]any
	}{{"noted", map[string]any{"note": "half way"}}, {"finish", nil}} {
		if err := c.Run.Live.EmitIntent(ctx, e.name, e.slots); err != nil {
			return nil, agent.Errorf(agent.KindPluginCrash, "%v", err)
		}
	}
	return &agent.AskResponse{Submission: []byte(`{"ok": true}`)}, nil
}

func (semEmitter) Close() error { return nil }
