package temporal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// The kill-a-worker acceptance test: two `kitsoki worker` processes take
// 20 concurrent sessions of testdata/kill, whose subprocess agent sleeps
// 300–800 ms per call; once the first worker's agents hold calls in
// flight, that worker is SIGKILLed. What it asserts:
//
//   - every session completes, in its terminal state, with the final
//     world of a local run (runtime.Open) of the same inputs;
//   - in each session's trace, every call_id has exactly one
//     agent.call.complete (the one answer the session used), and the agent
//     pid its meta names wrote a "done" line for that session and call_id;
//   - in the agent's log, per call identity (session id, call_id): at most
//     one "done" from the surviving worker's agents, and a second "done"
//     only from the killed worker's (an answer lost with it);
//   - the kill hit calls in flight: at least one call identity started
//     under the killed worker and again under the survivor, and the
//     sessions' traces hold at least one kitsoki.call.reissued.
//
// Turn latency p50/p95 (client-observed update round trips on the
// cluster; Session.Turn in the local run) goes to the test log. No
// assertion is made on speed; every wait is bounded.
func TestKillAWorker(t *testing.T) {
	const sessions, steps = 20, 5
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	stories := t.TempDir()
	installKillStory(t, stories)
	st := loadKillStory(t, stories, filepath.Join(t.TempDir(), "local.log"))
	ref := cluster.StoryRef{Path: "kill/app.yaml", Hash: st.ContentHash}
	inputs := make([][]int, sessions)
	for i := range inputs {
		for j := range steps {
			inputs[i] = append(inputs[i], (i*7+j*3)%11)
		}
	}

	localWorlds, localLat := runKillLocal(t, ctx, st, inputs)

	agentLog := filepath.Join(t.TempDir(), "agent.log")
	t.Setenv("SLEEP_LOG", agentLog) // the workers resolve ${SLEEP_LOG} from their environment
	queue := "kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []string{"--stories", stories, "--task-queue", queue, "--heartbeat-timeout", "5s"}
	victim := startWorker(t, t.TempDir(), args...)
	startWorker(t, t.TempDir(), args...)
	victimPid := victim.cmd.Process.Pid

	c, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	killed := make(chan int, 1)
	var killedAt atomic.Int64 // UnixNano of the kill
	go func() { killed <- killWhenBusy(ctx, victim, agentLog, 3, &killedAt) }()

	type outcome struct {
		res  cluster.SessionResult
		lat  []time.Duration
		t0s  []time.Time // when each turn's update was sent
		err  error
		runs client.WorkflowRun
	}
	outs := make([]outcome, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("kill-%s-%02d", queue, i)
			o := &outs[i]
			o.runs, o.err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
				cluster.SessionWorkflowName, cluster.SessionInput{Story: ref, SessionID: id})
			if o.err != nil {
				return
			}
			reqs := killRequests(inputs[i])
			for n, req := range reqs {
				t0 := time.Now()
				if _, err := updateOnce(ctx, c, id, fmt.Sprintf("%s-turn-%d", id, n+1), req); err != nil {
					o.err = fmt.Errorf("session %s turn %d (%s): %w", id, n+1, req.Intent, err)
					return
				}
				o.lat, o.t0s = append(o.lat, time.Since(t0)), append(o.t0s, t0)
			}
			o.err = o.runs.Get(ctx, &o.res)
		})
	}
	wg.Wait()
	inFlight := <-killed
	if inFlight == 0 {
		t.Fatal("the victim worker was never seen with calls in flight, so it was not killed")
	}
	t.Logf("SIGKILLed worker %d with %d calls in flight", victimPid, inFlight)

	var clusterLat, before, after []time.Duration
	reissued := 0
	used := map[callKey]int{} // the agent pid whose answer the session used
	for i, o := range outs {
		if o.err != nil {
			t.Errorf("session %d: %v", i, o.err)
			continue
		}
		clusterLat = append(clusterLat, o.lat...)
		for j, t0 := range o.t0s {
			if t0.UnixNano() < killedAt.Load() && t0.Add(o.lat[j]).UnixNano() < killedAt.Load() {
				before = append(before, o.lat[j])
			} else {
				after = append(after, o.lat[j])
			}
		}
		if o.res.State != "finished" {
			t.Errorf("session %d ended in %q, want finished", i, o.res.State)
		}
		if d := cmp.Diff(localWorlds[i], o.res.World.Map(), sessionIDAside); d != "" {
			t.Errorf("session %d: final world (-local +cluster):\n%s", i, d)
		}
		evs := queryTrace(t, ctx, c, o.runs.GetID())
		completes := map[string]int{}
		for _, e := range evs {
			switch e.Kind {
			case cluster.KindCallReissued:
				reissued++
			case trace.KindAgentCallComplete:
				completes[e.CallID]++
				meta, _ := e.Payload["meta"].(map[string]any)
				pid, _ := meta["pid"].(float64)
				used[callKey{o.runs.GetID(), e.CallID}] = int(pid)
			}
		}
		if len(completes) != steps {
			t.Errorf("session %d: %d call_ids completed, want %d: %v", i, len(completes), steps, completes)
		}
		for id, n := range completes {
			if n != 1 {
				t.Errorf("session %d: call %s has %d agent.call.complete events, want 1", i, id, n)
			}
		}
	}

	lines := readAgentLog(t, agentLog)
	starts, dones := map[callKey][]agentLine{}, map[callKey][]agentLine{}
	for _, l := range lines {
		switch l.kind {
		case "start":
			starts[l.key] = append(starts[l.key], l)
		case "done":
			dones[l.key] = append(dones[l.key], l)
		}
	}
	for k, ds := range dones {
		var survivor, fromVictim int
		for _, d := range ds {
			if d.worker == victimPid {
				fromVictim++
			} else {
				survivor++
			}
		}
		if survivor > 1 || fromVictim > 1 {
			t.Errorf("call %v answered %d times by the survivor's agents and %d by the killed worker's: %v", k, survivor, fromVictim, ds)
		}
	}
	for k, pid := range used {
		if !slices.ContainsFunc(dones[k], func(l agentLine) bool { return l.agent == pid }) {
			t.Errorf("call %v: the session used the answer of agent %d, which logged no done for it: %v", k, pid, dones[k])
		}
	}
	restarted := 0
	for _, ss := range starts {
		if slices.ContainsFunc(ss, func(l agentLine) bool { return l.worker == victimPid }) &&
			slices.ContainsFunc(ss, func(l agentLine) bool { return l.worker != victimPid }) {
			restarted++
		}
	}
	if restarted == 0 || reissued == 0 {
		t.Errorf("no call was issued again after the kill (%d identities restarted on the survivor, %d kitsoki.call.reissued events)", restarted, reissued)
	}
	t.Logf("%d sessions x %d calls; %d agent starts, %d call identities started under both workers, %d kitsoki.call.reissued",
		sessions, steps, countKind(lines, "start"), restarted, reissued)
	t.Logf("turn latency, cluster (2 workers, one SIGKILLed): p50 %s p95 %s over %d turns", pct(clusterLat, 50), pct(clusterLat, 95), len(clusterLat))
	t.Logf("  of which ended before the kill: p50 %s p95 %s over %d turns; the others: p50 %s p95 %s over %d turns",
		pct(before, 50), pct(before, 95), len(before), pct(after, 50), pct(after, 95), len(after))
	t.Logf("turn latency, local (runtime.Open, 20 concurrent sessions): p50 %s p95 %s over %d turns", pct(localLat, 50), pct(localLat, 95), len(localLat))
}

// killRequests are a session's intents: one step per k, then finish.
func killRequests(ks []int) []cluster.IntentRequest {
	var reqs []cluster.IntentRequest
	for _, k := range ks {
		reqs = append(reqs, cluster.IntentRequest{Intent: "step", Slots: cluster.Value{V: map[string]any{"k": k}}})
	}
	return append(reqs, cluster.IntentRequest{Intent: "finish"})
}

// updateOnce sends an intent update under a fixed update id, again (the
// server deduplicates by id) when the wait for it fails with a transient
// error while a worker is gone; at most 10 tries.
func updateOnce(ctx context.Context, c client.Client, wfID, updateID string, req cluster.IntentRequest) (*cluster.TurnResult, error) {
	var last error
	for range 10 {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wfID, UpdateID: updateID, UpdateName: cluster.IntentUpdate,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			var tr cluster.TurnResult
			if err = h.Get(ctx, &tr); err == nil {
				return &tr, nil
			}
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil, last
}

func queryTrace(t *testing.T, ctx context.Context, c client.Client, wfID string) []trace.Event {
	t.Helper()
	v, err := c.QueryWorkflow(ctx, wfID, "", cluster.QueryTrace)
	if err != nil {
		t.Errorf("query trace of %s: %v", wfID, err)
		return nil
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Errorf("trace of %s: %v", wfID, err)
	}
	return evs
}

// installKillStory copies testdata/kill into dir/kill, builds the sleepy
// agent into dir/kill/bin/sleepy and marks dir as a stories tree.
func installKillStory(t *testing.T, dir string) {
	t.Helper()
	dst := filepath.Join(dir, "kill")
	if err := os.CopyFS(dst, os.DirFS("testdata/kill")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".kitsoki-root"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dst, "bin", "sleepy"), "./testdata/sleepy")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/sleepy: %v\n%s", err, out)
	}
}

// loadKillStory loads the story with its agent logging to logPath.
func loadKillStory(t *testing.T, dir, logPath string) *story.Story {
	t.Helper()
	t.Setenv("SLEEP_LOG", logPath)
	st, err := story.Load(filepath.Join(dir, "kill", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runKillLocal runs the sessions concurrently in this process, each its
// own runtime.Open wired as kitsoki run and the worker wire a run (live
// agents: the story's subprocess agent), and
// returns each final world and every turn's latency.
func runKillLocal(t *testing.T, ctx context.Context, st *story.Story, inputs [][]int) ([]map[string]any, []time.Duration) {
	t.Helper()
	worlds := make([]map[string]any, len(inputs))
	lats := make([][]time.Duration, len(inputs))
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	for i, ks := range inputs {
		wg.Go(func() {
			rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: fmt.Sprintf("local-%02d", i)}})
			if err != nil {
				errs[i] = err
				return
			}
			defer rt.Close()
			sess := rt.Session()
			if _, err := sess.Start(ctx); err != nil {
				errs[i] = err
				return
			}
			for _, req := range killRequests(ks) {
				t0 := time.Now()
				out, err := sess.Turn(ctx, req.Intent, req.Slots.Map(), "")
				if err == nil && out.Err != nil {
					err = out.Err
				}
				if err != nil {
					errs[i] = fmt.Errorf("local session %d, %s: %w (last_error: %v)", i, req.Intent, err, sess.World()["last_error"])
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
			worlds[i] = sess.World()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return worlds, slices.Concat(lats...)
}

// killWhenBusy SIGKILLs the worker once its agents hold at least n calls
// in flight (started, not done, by the log), polling the log every 20 ms
// until ctx ends. It returns the calls in flight at the kill, 0 when it
// did not kill.
func killWhenBusy(ctx context.Context, w *workerProc, logPath string, n int, at *atomic.Int64) int {
	pid := w.cmd.Process.Pid
	for ctx.Err() == nil {
		lines, _ := parseAgentLog(logPath)
		open := map[callKey]int{}
		for _, l := range lines {
			if l.worker != pid {
				continue
			}
			if l.kind == "start" {
				open[l.key]++
			} else {
				open[l.key]--
			}
		}
		busy := 0
		for _, v := range open {
			if v > 0 {
				busy++
			}
		}
		if busy >= n {
			at.Store(time.Now().UnixNano())
			_ = w.cmd.Process.Signal(syscall.SIGKILL) // the worker only: its agents die by their parent-death signal
			return busy
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0
}

type callKey struct{ session, callID string }

type agentLine struct {
	kind          string
	key           callKey
	agent, worker int
}

func readAgentLog(t *testing.T, path string) []agentLine {
	t.Helper()
	lines, err := parseAgentLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// parseAgentLog reads the sleepy agent's log: "start|done SESSION CALL
// agent=PID worker=PID" lines.
func parseAgentLog(path string) ([]agentLine, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []agentLine
	r := bufio.NewReader(f)
	for {
		s, err := r.ReadString('\n')
		if err == io.EOF {
			return out, nil // a line without its newline is still being written
		}
		if err != nil {
			return out, err
		}
		var l agentLine
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "%s %s %s agent=%d worker=%d", &l.kind, &l.key.session, &l.key.callID, &l.agent, &l.worker); err != nil {
			return out, fmt.Errorf("agent log line %q: %w", s, err)
		}
		out = append(out, l)
	}
}

func countKind(lines []agentLine, kind string) int {
	n := 0
	for _, l := range lines {
		if l.kind == kind {
			n++
		}
	}
	return n
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond)
}
