package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.temporal.io/sdk/client"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
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
	driveHello(ctx, t, c, queue, "worker-proc-1", st)
}

// cluster is a kitsoki worker process on its own task queue, and the
// flags that point kitsoki run and kitsoki session at it.
type clusterEnv struct {
	stories string
	flags   []string
}

func newClusterEnv(t *testing.T, workerArgs ...string) clusterEnv {
	t.Helper()
	stories, err := filepath.Abs(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	queue := "q-" + strings.ReplaceAll(t.Name(), "/", "-")
	startWorker(t, t.TempDir(), append([]string{"--stories", stories, "--task-queue", queue}, workerArgs...)...)
	return clusterEnv{stories: stories, flags: []string{"--temporal", server.Addr, "--task-queue", queue}}
}

func (e clusterEnv) run(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	return kitsokiRun(t, ctx, e.stories, append(args, e.flags...)...)
}

// timesAside are the trace fields that read a clock: an event's ts and
// an agent call's duration_ms.
var timesAside = []cmp.Option{cmpopts.IgnoreFields(trace.Event{}, "TS"),
	cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "duration_ms" }), sessionIDAside}

// sessionIDAside leaves out world.session_id, which every story's world
// has: a local run's is generated, a cluster session's is its key.
var sessionIDAside = cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "session_id" })

// readTrace reads a trace file: its header (written_at, story_path and
// session_id aside) and its events (ts aside).
func readTrace(t *testing.T, path string) (map[string]any, []trace.Event) {
	t.Helper()
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var hdr map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &hdr); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"written_at", "story_path", "session_id"} {
		delete(hdr, k)
	}
	return hdr, evs
}

// TestRunOnClusterMatchesLocalRun runs the hello story with kitsoki run
// --temporal against a kitsoki worker process and locally, with the same
// --intents: the same stdout and exit code, and kitsoki session trace
// --temporal writes the events the local trace holds (timestamps aside).
func TestRunOnClusterMatchesLocalRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	intents := "greet name=Ada style=formal,bye"
	localTrace := filepath.Join(t.TempDir(), "local.jsonl")
	wantOut, wantErr, wantCode := kitsokiRun(t, ctx, e.stories, "run", "hello/app.yaml", "--intents", intents, "--trace", localTrace)
	if wantCode != 0 {
		t.Fatalf("local run: exit %d\n%s", wantCode, wantErr)
	}
	out, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", intents, "--session", "match-1")
	if code != 0 {
		t.Fatalf("run --temporal: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if d := cmp.Diff(wantOut, out); d != "" {
		t.Errorf("stdout (-local +cluster):\n%s", d)
	}
	if want := "kitsoki: session match-1 on " + server.Addr + " (namespace default, task queue " + e.flags[3] + ")\n"; errs != want {
		t.Errorf("stderr = %q, want %q", errs, want)
	}

	remoteTrace := filepath.Join(t.TempDir(), "remote.jsonl")
	_, errs, code = e.run(t, ctx, "session", "trace", "match-1", "-o", remoteTrace)
	if code != 0 {
		t.Fatalf("session trace: exit %d: %s", code, errs)
	}
	if want := "kitsoki: wrote the trace of session match-1 to " + remoteTrace + "\n"; errs != want {
		t.Errorf("session trace stderr = %q, want %q", errs, want)
	}
	lh, levs := readTrace(t, localTrace)
	rh, revs := readTrace(t, remoteTrace)
	if d := cmp.Diff(lh, rh); d != "" {
		t.Errorf("trace header (-local +cluster):\n%s", d)
	}
	if len(levs) < 10 {
		t.Fatalf("the local trace has %d events", len(levs))
	}
	if d := cmp.Diff(levs, revs, timesAside...); d != "" {
		t.Errorf("trace events (-local +cluster, ts and durations aside):\n%s", d)
	}
}

// TestRunOnClusterExitCodes: a rejected intent is exit 3 with the local
// run's lines; input that ends before a terminal state is exit 6.
func TestRunOnClusterExitCodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	for _, tc := range []struct {
		intents string
		code    int
	}{
		{"bye", 3},
		{"greet name=Ada", 6},
		{"greet name=Ada style=sideways", 3},
	} {
		_, lerr, lcode := kitsokiRun(t, ctx, e.stories, "run", "hello/app.yaml", "--intents", tc.intents, "--trace", filepath.Join(t.TempDir(), "t.jsonl"))
		id := fmt.Sprintf("codes-%d", tc.code) + strings.ReplaceAll(strings.ReplaceAll(tc.intents, " ", "-"), "=", "-")
		out, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", tc.intents, "--session", id)
		if code != tc.code || lcode != tc.code {
			t.Errorf("%s: exit %d on the cluster, %d locally; want %d\nstdout:\n%s\nstderr:\n%s", tc.intents, code, lcode, tc.code, out, errs)
		}
		// The lines after the session line are the local run's; the
		// cluster run adds where to reattach.
		local := strings.SplitN(lerr, "\n", 2)[1]
		remote := strings.SplitN(errs, "\n", 2)[1]
		hint := "kitsoki: session " + id + " goes on on the cluster; reattach with kitsoki run hello/app.yaml --temporal " + server.Addr + " --session " + id + "\n"
		if d := cmp.Diff(local+hint, remote); d != "" {
			t.Errorf("%s: stderr (-local +cluster):\n%s", tc.intents, d)
		}
	}
}

// TestRunOnClusterReattach: --session ID picks a running session up,
// skips the inputs it took, refuses different ones, and refuses a
// finished session.
func TestRunOnClusterReattach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	if _, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", "greet name=Ada", "--session", "re-1"); code != 6 {
		t.Fatalf("first run: exit %d, want 6\n%s", code, errs)
	}
	_, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", "greet name=Bob,bye", "--session", "re-1")
	want := "kitsoki: reattached to session re-1 after turn 1 in state \"greeted\"\n" +
		"kitsoki: reattaching to session re-1: input 1 is \"greet name=Bob\", but the session's turn 1 took \"greet name=Ada\"; give the same inputs as the run that started it (those it took are skipped), or start a new session\n" +
		"kitsoki: session re-1 goes on on the cluster; reattach with kitsoki run hello/app.yaml --temporal " + server.Addr + " --session re-1\n"
	if code != 2 || errs != want {
		t.Errorf("different inputs: exit %d, stderr:\n%s\nwant exit 2, stderr:\n%s", code, errs, want)
	}
	out, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", "greet name=Ada,bye", "--session", "re-1")
	if code != 0 || out != "Ada was greeted (casual).\nBye! 1 greeting(s) today.\n" {
		t.Errorf("reattach: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	_, errs, code = e.run(t, ctx, "run", "hello/app.yaml", "--intents", "bye", "--session", "re-1")
	if want := "kitsoki: session re-1 finished in state \"farewell\" at turn 2; start a new session\n"; code != 1 || errs != want {
		t.Errorf("finished session: exit %d, stderr %q; want exit 1, %q", code, errs, want)
	}

	// kitsoki session list and show read it back from the cluster.
	out, errs, code = e.run(t, ctx, "session", "list")
	if code != 0 {
		t.Fatalf("session list: exit %d: %s", code, errs)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "re-1\t") {
			line = l
		}
	}
	if !strings.HasPrefix(out, "ID\tSTORY\tSTATE\tTURN\tLAST ACTIVITY\tFINISHED\tCOST\n") ||
		!strings.HasPrefix(line, "re-1\thello\tfarewell\t2\t") || !strings.HasSuffix(line, "\tyes\t$0.0000") {
		t.Errorf("session list:\n%s", out)
	}
	out, errs, code = e.run(t, ctx, "session", "show", "re-1", "--json")
	if code != 0 {
		t.Fatalf("session show: exit %d: %s", code, errs)
	}
	var show struct {
		Session struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Story  struct {
				Path   string `json:"path"`
				Bundle string `json:"bundle"`
			} `json:"story"`
		} `json:"session"`
		Workflow struct {
			State    string         `json:"state"`
			Turn     int64          `json:"turn"`
			Finished bool           `json:"finished"`
			World    map[string]any `json:"world"`
			Allowed  []string       `json:"allowed_intents"`
		} `json:"workflow"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatalf("session show: %v\n%s", err, out)
	}
	if show.Session.ID != "re-1" || show.Session.Status != "completed" || show.Session.Story.Path != "stories/hello/app.yaml" || !strings.HasPrefix(show.Session.Story.Bundle, "sha256:") ||
		show.Workflow.State != "farewell" || show.Workflow.Turn != 2 || !show.Workflow.Finished || show.Workflow.World["name"] != "Ada" {
		t.Errorf("session show:\n%s", out)
	}
}

// TestSessionShowRunning shows a running session's allowed intents.
func TestSessionShowRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	if _, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", "greet name=Ada", "--session", "show-1"); code != 6 {
		t.Fatalf("run: exit %d, want 6\n%s", code, errs)
	}
	out, errs, code := e.run(t, ctx, "session", "show", "show-1", "--json")
	if code != 0 {
		t.Fatalf("session show: exit %d: %s", code, errs)
	}
	var show struct {
		Session  struct{ Status string } `json:"session"`
		Workflow struct {
			State   string   `json:"state"`
			Turn    int64    `json:"turn"`
			Allowed []string `json:"allowed_intents"`
		} `json:"workflow"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatal(err)
	}
	if show.Session.Status != "running" || show.Workflow.State != "greeted" || show.Workflow.Turn != 1 ||
		!cmp.Equal(show.Workflow.Allowed, []string{"again", "bye"}) {
		t.Errorf("session show:\n%s", out)
	}
	// Without --json: the same facts as lines to read.
	out, errs, code = e.run(t, ctx, "session", "show", "show-1")
	for _, want := range []string{"session     show-1\n", "\nstatus      running\n", "\nstate       greeted, turn 1\n",
		"\nallowed     again, bye\n", "\nworld\n", "\n  name = \"Ada\"\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("session show (text): exit %d, want %q in\n%s%s", code, want, out, errs)
		}
	}
	_, errs, code = e.run(t, ctx, "session", "show", "no-such")
	want := "kitsoki: session no-such: no such session on the cluster (namespace default at " + server.Addr + "; kitsoki session list --temporal " + server.Addr + " shows them)\n"
	if code != 1 || errs != want {
		t.Errorf("unknown session: exit %d, stderr %q; want 1, %q", code, errs, want)
	}
}

// TestWorkerCassetteMatchesLocalRun: a worker's --cassette answers every
// session's calls from the cassette's start, as kitsoki run --cassette
// does: two sessions print the local run's failures handled by on_error,
// and their traces hold the local run's events.
func TestWorkerCassetteMatchesLocalRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cas, err := filepath.Abs(filepath.Join(storiesDir, "hello/cassettes/agent_errors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := newClusterEnv(t, "--cassette", cas)
	intents := "greet name=Ada,greet name=Ada,bye"
	localTrace := filepath.Join(t.TempDir(), "local.jsonl")
	wantOut, wantErr, wantCode := kitsokiRun(t, ctx, e.stories, "run", "hello/app.yaml", "--cassette", cas, "--intents", intents, "--trace", localTrace)
	if wantCode != 0 || !strings.Contains(wantErr, "on_error → lobby") {
		t.Fatalf("local run: exit %d\n%s", wantCode, wantErr)
	}
	_, levs := readTrace(t, localTrace)
	for _, id := range []string{"cas-1", "cas-2"} {
		out, errs, code := e.run(t, ctx, "run", "hello/app.yaml", "--intents", intents, "--session", id)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstderr:\n%s", id, code, errs)
		}
		if d := cmp.Diff(wantOut, out); d != "" {
			t.Errorf("%s: stdout (-local +cluster):\n%s", id, d)
		}
		if d := cmp.Diff(strings.SplitN(wantErr, "\n", 2)[1], strings.SplitN(errs, "\n", 2)[1]); d != "" {
			t.Errorf("%s: stderr after the session line (-local +cluster):\n%s", id, d)
		}
		remoteTrace := filepath.Join(t.TempDir(), id+".jsonl")
		if _, errs, code := e.run(t, ctx, "session", "trace", id, "-o", remoteTrace); code != 0 {
			t.Fatalf("session trace %s: exit %d: %s", id, code, errs)
		}
		_, revs := readTrace(t, remoteTrace)
		if d := cmp.Diff(levs, revs, timesAside...); d != "" {
			t.Errorf("%s: trace events (-local +cluster, ts and durations aside):\n%s", id, d)
		}
	}
}

// TestRunOnClusterEndsAtItsStart: a story whose root is terminal prints
// its view and exits 0, as locally, though its workflow closed before the
// client attached.
func TestRunOnClusterEndsAtItsStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stories, err := filepath.Abs("testdata/stories")
	if err != nil {
		t.Fatal(err)
	}
	queue := "q-" + t.Name()
	startWorker(t, t.TempDir(), "--stories", stories, "--task-queue", queue)
	wantOut, _, wantCode := kitsokiRun(t, ctx, stories, "run", "instant/app.yaml", "--world", "n=7", "--trace", filepath.Join(t.TempDir(), "t.jsonl"))
	out, errs, code := kitsokiRun(t, ctx, stories, "run", "instant/app.yaml", "--world", "n=7", "--session", "instant-1",
		"--temporal", server.Addr, "--task-queue", queue)
	if code != 0 || wantCode != 0 || out != wantOut || out != "Done before it began: 7.\n" {
		t.Errorf("exit %d (local %d), stdout %q (local %q)\nstderr:\n%s", code, wantCode, out, wantOut, errs)
	}
}

// startContinuingHello starts session id of the hello story on e's task
// queue, continuing as new after every turn, and returns the client that
// drives it (closed when the test ends) with the story it loaded.
func startContinuingHello(ctx context.Context, t *testing.T, e clusterEnv, id string) (*cluster.Client, *story.Story) {
	t.Helper()
	st, err := story.Load(filepath.Join(storiesDir, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: server.Addr, TaskQueue: e.flags[3]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	in := cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: id, ContinueAsNewAfter: 1}
	if err := c.Start(ctx, in, st.App.ID); err != nil {
		t.Fatal(err)
	}
	return c, st
}

// TestTraceAcrossContinueAsNew: a session that continued as new after
// every turn still has one trace: the client walks its runs back, and the
// events are a local run's.
func TestTraceAcrossContinueAsNew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	c, _ := startContinuingHello(ctx, t, e, "can-1")
	for _, req := range []cluster.IntentRequest{
		{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada", "style": "formal"}}, Input: "greet name=Ada style=formal"},
		{Intent: "bye", Slots: cluster.Value{V: map[string]any{}}, Input: "bye"},
	} {
		if _, err := c.Intent(ctx, "can-1", req); err != nil {
			t.Fatalf("%s: %v", req.Intent, err)
		}
	}
	runs := 0
	for it := c.Temporal().GetWorkflowHistory(ctx, "can-1", "", false, 0); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId() != "" {
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("the last run continued %d runs, want 1 (ContinueAsNewAfter 1, 2 turns)", runs)
	}
	b, err := c.TraceJSONL(ctx, "can-1")
	if err != nil {
		t.Fatal(err)
	}
	remote := filepath.Join(t.TempDir(), "remote.jsonl")
	if err := os.WriteFile(remote, b, 0o600); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "local.jsonl")
	if _, errs, code := kitsokiRun(t, ctx, e.stories, "run", "hello/app.yaml", "--intents", "greet name=Ada style=formal,bye", "--trace", local); code != 0 {
		t.Fatalf("local run: exit %d: %s", code, errs)
	}
	_, levs := readTrace(t, local)
	_, revs := readTrace(t, remote)
	if d := cmp.Diff(levs, revs, timesAside...); d != "" {
		t.Errorf("trace events (-local +cluster, ts and durations aside):\n%s", d)
	}
}
