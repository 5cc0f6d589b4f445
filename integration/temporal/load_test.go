package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// EnvLoad, set to a number of sessions (1000 for issue 32's figure), runs
// TestConcurrentSessionsLoad; it is skipped otherwise (it takes minutes).
const EnvLoad = "KITSOKI_TEMPORAL_LOAD"

// TestConcurrentSessionsLoad is the load script of issue 32: N sessions of
// the hello story live at once on 2 `kitsoki worker` processes, the
// agent the in-process demo greeter (zero latency). Each session takes two
// turns (greet, whose call is an activity, then again) from a client that
// keeps 64 updates in flight. It reports the turn latency (p50, p95), the
// workers' RSS per live session, the history events per turn and the
// continue-as-new threshold. Loopback only; bounded by N.
func TestConcurrentSessionsLoad(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(EnvLoad))
	if n <= 0 {
		t.Skipf("set %s=1000 to run the load of issue 32", EnvLoad)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	stories, err := filepath.Abs(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	queue := "q-load"
	w1 := startWorker(t, t.TempDir(), "--stories", stories, "--task-queue", queue)
	w2 := startWorker(t, t.TempDir(), "--stories", stories, "--task-queue", queue)
	c, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := story.Load(filepath.Join(stories, "hello/app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rssBefore := rss(t, w1) + rss(t, w2)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("load-%d-%d", time.Now().UnixNano(), i)
	}
	defer func() {
		for _, id := range ids {
			_ = c.TerminateWorkflow(context.Background(), id, "", "load test done")
		}
	}()
	parallel(t, ids, 64, func(id string) (time.Duration, error) {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, cluster.SessionWorkflowName,
			cluster.SessionInput{Story: cluster.StoryRef{Path: "hello/app.yaml", Hash: st.ContentHash}, SessionID: id}); err != nil {
			return 0, err
		}
		return update(ctx, c, id, cluster.AttachUpdate, nil)
	})
	eventsAtStart := historyLen(t, ctx, c, ids[0])
	var lat []time.Duration
	for _, req := range []cluster.IntentRequest{
		{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}},
		{Intent: "again"},
	} {
		lat = append(lat, parallel(t, ids, 64, func(id string) (time.Duration, error) {
			return update(ctx, c, id, cluster.IntentUpdate, req)
		})...)
	}
	rssAfter := rss(t, w1) + rss(t, w2)
	perTurn := float64(historyLen(t, ctx, c, ids[0])-eventsAtStart) / 2
	slices.Sort(lat)
	t.Logf("sessions %d on 2 workers: turn latency p50 %s, p95 %s (%d turns); worker RSS %d KiB before, %d KiB with every session live: %.1f KiB per live session; history events per turn %.1f; continue-as-new after %d turns (%.0f events)",
		n, lat[len(lat)/2], lat[len(lat)*95/100], len(lat), rssBefore, rssAfter, float64(rssAfter-rssBefore)/float64(n),
		perTurn, cluster.DefaultContinueAsNewAfter, perTurn*cluster.DefaultContinueAsNewAfter)
}

// update sends one update and waits for its result; it returns how long
// that took.
func update(ctx context.Context, c client.Client, id, name string, arg any) (time.Duration, error) {
	start := time.Now()
	var args []any
	if arg != nil {
		args = []any{arg}
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, Args: args,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return time.Since(start), err
}

// parallel runs fn for every id, at most width at once, and returns the
// durations; the first error fails the test.
func parallel(t *testing.T, ids []string, width int, fn func(string) (time.Duration, error)) []time.Duration {
	t.Helper()
	var mu sync.Mutex
	var out []time.Duration
	var first error
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := fn(id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("%s: %w", id, err)
			}
			out = append(out, d)
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	return out
}

// rss is a worker process's resident set, in KiB.
func rss(t *testing.T, p *workerProc) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// historyLen is the number of events of the session's current run.
func historyLen(t *testing.T, ctx context.Context, c client.Client, id string) int {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
