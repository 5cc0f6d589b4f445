package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// EnvLoad, set to a number of sessions (1000 for issue 32's figure), runs
// TestConcurrentSessionsLoad; it is skipped otherwise (it takes minutes).
// EnvLoadTurns is the turns each session takes (default 3); EnvLoadWidth
// how many turns are in flight at once (default 64).
const (
	EnvLoad      = "KITSOKI_TEMPORAL_LOAD"
	EnvLoadTurns = "KITSOKI_TEMPORAL_LOAD_TURNS"
	EnvLoadWidth = "KITSOKI_TEMPORAL_LOAD_WIDTH"
)

// Temporal's history limits (the server's defaults): it warns at the first
// pair and terminates a run at the second.
const (
	historyWarnEvents  = 10 * 1024
	historyWarnBytes   = 10 << 20
	historyLimitEvents = 50 * 1024
	historyLimitBytes  = 50 << 20
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestConcurrentSessionsLoad is the load script of issue 32: N sessions
// live at once on 2 `kitsoki worker` processes started with no --stories
// (each session's story is its bundle, as kitsoki run --temporal starts
// one), the agent the in-process demo greeter (zero latency). Every
// session is started, then takes its turns (the bench story's step: one
// call each), round by round, from a client that keeps at most WIDTH turns
// in flight. It reports the turn latency (p50, p95), the workers' RSS per
// live session and CPU per turn, the history events and bytes per turn,
// and where continue-as-new stands against Temporal's history limits.
// Loopback only; bounded by N, the turns and a 30-minute deadline.
func TestConcurrentSessionsLoad(t *testing.T) {
	n := envInt(EnvLoad, 0)
	if n == 0 {
		t.Skipf("set %s=1000 to run the load of issue 32", EnvLoad)
	}
	turns, width := envInt(EnvLoadTurns, 3), envInt(EnvLoadWidth, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	queue := fmt.Sprintf("q-load-%d", time.Now().UnixNano())
	w1 := startWorker(t, t.TempDir(), "--task-queue", queue)
	w2 := startWorker(t, t.TempDir(), "--task-queue", queue)
	store := &cluster.Blobs{Dir: os.Getenv("KITSOKI_BLOBS_DIR")}
	c, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: server.Addr, TaskQueue: queue, DataConverter: store.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	app, err := filepath.Abs(benchStory)
	if err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cluster.PackStory(app, st, store, "")
	if err != nil {
		t.Fatal(err)
	}
	workers := []*workerProc{w1, w2}
	rssBefore := sum(workers, rss)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", queue, i)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer ccancel()
		parallel(t, ids, width, func(id string) (time.Duration, error) {
			_ = c.Temporal().TerminateWorkflow(cctx, id, "", "load test done")
			return 0, nil
		})
	}()
	began := time.Now()
	starts := parallel(t, ids, width, func(id string) (time.Duration, error) {
		t0 := time.Now()
		if err := c.Start(ctx, cluster.SessionInput{Story: ref, SessionID: id}, st.App.ID); err != nil {
			return 0, err
		}
		_, err := c.Attach(ctx, id)
		return time.Since(t0), err
	})
	startWall := time.Since(began)
	eventsAtStart, bytesAtStart := historySize(t, ctx, c, ids[0])
	cpuBefore := sum(workers, func(_ *testing.T, p *workerProc) int { return int(procCPU(p.cmd.Process.Pid) / time.Millisecond) })
	srvBefore := procCPU(server.cmd.Process.Pid)
	began = time.Now()
	var lat []time.Duration
	for range turns {
		lat = append(lat, parallel(t, ids, width, func(id string) (time.Duration, error) {
			t0 := time.Now()
			_, err := c.Intent(ctx, id, cluster.IntentRequest{Intent: "step"})
			return time.Since(t0), err
		})...)
	}
	turnWall := time.Since(began)
	cpuMs := sum(workers, func(_ *testing.T, p *workerProc) int { return int(procCPU(p.cmd.Process.Pid) / time.Millisecond) }) - cpuBefore
	srvMs := float64((procCPU(server.cmd.Process.Pid) - srvBefore) / time.Millisecond)
	rssAfter := sum(workers, rss)
	events, bytes := historySize(t, ctx, c, ids[0])
	for _, id := range []string{ids[0], ids[n/2], ids[n-1]} {
		s, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(s.World.Map()["steps"]); got != strconv.Itoa(turns) || s.Turn != int64(turns) {
			t.Errorf("session %s: turn %d, steps %s; want %d of each", id, s.Turn, got, turns)
		}
	}

	perTurn := float64(events-eventsAtStart) / float64(turns)
	bytesPerTurn := float64(bytes-bytesAtStart) / float64(turns)
	after := cluster.DefaultContinueAsNewAfter
	t.Logf("%d sessions on 2 workers, %d turns each, %d in flight", n, turns, width)
	t.Logf("start + attach: p50 %s p95 %s; all %d started in %s", pct(starts, 50), pct(starts, 95), n, startWall.Round(time.Millisecond))
	t.Logf("turn latency: p50 %s p95 %s over %d turns in %s (%.1f turns/s)", pct(lat, 50), pct(lat, 95), len(lat), turnWall.Round(time.Millisecond),
		float64(len(lat))/turnWall.Seconds())
	t.Logf("workers: RSS %d KiB before, %d KiB with every session live: %.1f KiB per live session; CPU %.2f ms per turn (the dev server's: %.2f ms)",
		rssBefore, rssAfter, float64(rssAfter-rssBefore)/float64(n), float64(cpuMs)/float64(len(lat)), srvMs/float64(len(lat)))
	t.Logf("history: %d events and %d bytes at the start (turn 0), %.1f events and %.0f bytes per turn", eventsAtStart, bytesAtStart, perTurn, bytesPerTurn)
	t.Logf("continue-as-new after %d turns: about %.0f events and %.0f KiB a run; Temporal warns at %d events or %d MiB (turn %.0f here) and ends a run at %d events or %d MiB (turn %.0f)",
		after, float64(eventsAtStart)+perTurn*float64(after), (float64(bytesAtStart)+bytesPerTurn*float64(after))/1024,
		historyWarnEvents, historyWarnBytes>>20, min((historyWarnEvents-float64(eventsAtStart))/perTurn, (historyWarnBytes-float64(bytesAtStart))/bytesPerTurn),
		historyLimitEvents, historyLimitBytes>>20, min((historyLimitEvents-float64(eventsAtStart))/perTurn, (historyLimitBytes-float64(bytesAtStart))/bytesPerTurn))
}

func sum(ps []*workerProc, f func(*testing.T, *workerProc) int) int {
	n := 0
	for _, p := range ps {
		n += f(nil, p)
	}
	return n
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}

// historySize is the number of events of the session's current run and
// their encoded size.
func historySize(t *testing.T, ctx context.Context, c *cluster.Client, id string) (int, int) {
	t.Helper()
	it := c.Temporal().GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n, size := 0, 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n++
		size += proto.Size(e)
	}
	return n, size
}
