package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
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

// The floor of a turn on the cluster: a bare SDK workflow whose update
// handler runs one activity (that does nothing) and returns, the least a
// turn that makes one call can cost on Temporal.
const (
	floorWorkflow = "bench.floor"
	floorActivity = "bench.noop"
	floorUpdate   = "turn"
)

func floorNoop(context.Context) (string, error) { return "ok", nil }

func floorSession(ctx workflow.Context) error {
	ao := workflow.ActivityOptions{StartToCloseTimeout: time.Minute}
	if err := workflow.SetUpdateHandler(ctx, floorUpdate, func(ctx workflow.Context) (string, error) {
		var out string
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), floorActivity).Get(ctx, &out)
		return out, err
	}); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// demoAgentsFor answers the demo greeter in the worker's process, at once
// (a zero-latency agent).
func demoAgentsFor(*story.Story, string) runtime.Config {
	return runtime.Config{IgnorePins: true, Agents: runtime.Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}}}
}

// benchStory is the story of the benchmark and the load test: each step is
// one turn making one call.
const benchStory = "testdata/bench/app.yaml"

// BenchmarkTurnVsFloor (issue 32): one op is one turn of a kitsoki session
// on the cluster (the step intent as an update waited for to completion;
// the turn makes one call, a kitsoki.invoke activity the in-process demo
// greeter answers at once) and, right after it, one turn of the floor (an
// update whose handler runs one activity). Both run in this process against
// the dev server, on workers of their own, alternating op by op so that
// the machine's load falls on both alike. It reports each one's median
// wall time per turn, their ratio, and the CPU time per turn of this
// process (client and workers) and of the dev server (from /proc), summed
// over the ops. The session is started from its bundle, as kitsoki run
// starts one, and continues as new every 200 turns, as in production.
func BenchmarkTurnVsFloor(b *testing.B) {
	ctx := context.Background()
	store := &cluster.Blobs{Dir: b.TempDir()}
	raw, err := client.DialContext(ctx, client.Options{HostPort: server.Addr, Logger: quiet{}, DataConverter: store.DataConverter()})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	fw := worker.New(raw, "bench-floor", worker.Options{})
	fw.RegisterWorkflowWithOptions(floorSession, workflow.RegisterOptions{Name: floorWorkflow})
	fw.RegisterActivityWithOptions(floorNoop, activity.RegisterOptions{Name: floorActivity})
	kw, err := cluster.NewWorker(raw, cluster.WorkerOptions{TaskQueue: "bench-kitsoki", StoriesDir: b.TempDir(), Blobs: store, Config: demoAgentsFor})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []worker.Worker{fw, kw} {
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
	}
	kc, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: server.Addr, TaskQueue: "bench-kitsoki", DataConverter: store.DataConverter()})
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	app, err := filepath.Abs(benchStory)
	if err != nil {
		b.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		b.Fatal(err)
	}
	ref, err := cluster.PackStory(app, st, store, "")
	if err != nil {
		b.Fatal(err)
	}
	stamp := time.Now().UnixNano()
	kid, fid := fmt.Sprintf("bench-k-%d", stamp), fmt.Sprintf("bench-f-%d", stamp)
	if err := kc.Start(ctx, cluster.SessionInput{Story: ref, SessionID: kid}, st.App.ID); err != nil {
		b.Fatal(err)
	}
	defer raw.TerminateWorkflow(ctx, kid, "", "benchmark done")
	if _, err := kc.Attach(ctx, kid); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fid, TaskQueue: "bench-floor"}, floorWorkflow); err != nil {
		b.Fatal(err)
	}
	defer raw.TerminateWorkflow(ctx, fid, "", "benchmark done")
	floorTurn := func() error {
		h, err := raw.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: fid, UpdateName: floorUpdate, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		return err
	}
	kitsokiTurn := func() error {
		_, err := kc.Intent(ctx, kid, cluster.IntentRequest{Intent: "step"})
		return err
	}
	if err := floorTurn(); err != nil { // warm both paths once
		b.Fatal(err)
	}
	if err := kitsokiTurn(); err != nil {
		b.Fatal(err)
	}

	var k, f turnCost
	for b.Loop() {
		if err := k.take(kitsokiTurn); err != nil {
			b.Fatalf("kitsoki turn: %v", err)
		}
		if err := f.take(floorTurn); err != nil {
			b.Fatalf("floor turn: %v", err)
		}
	}
	b.StopTimer()
	km, fm := k.median(), f.median()
	b.ReportMetric(float64(km), "kitsoki-median-ns/turn")
	b.ReportMetric(float64(fm), "floor-median-ns/turn")
	b.ReportMetric(float64(km)/float64(fm), "median-ratio")
	b.ReportMetric(k.selfCPU(), "kitsoki-cpu-ns/turn")
	b.ReportMetric(f.selfCPU(), "floor-cpu-ns/turn")
	b.ReportMetric(k.serverCPU(), "kitsoki-server-cpu-ns/turn")
	b.ReportMetric(f.serverCPU(), "floor-server-cpu-ns/turn")
	// The floor's history per turn (the start and the warm-up turn aside);
	// the load test reports kitsoki's.
	it := raw.GetWorkflowHistory(ctx, fid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		events++
	}
	b.ReportMetric(float64(events)/float64(len(f.wall)+1), "floor-events/turn")
}

// turnCost accumulates the turns of one side of the benchmark.
type turnCost struct {
	wall      []time.Duration
	self, srv time.Duration // CPU time of this process and of the dev server
}

// take runs one turn and records its wall time and the CPU time this
// process and the dev server spent during it.
func (c *turnCost) take(turn func() error) error {
	self0, srv0 := selfCPU(), procCPU(server.cmd.Process.Pid)
	start := time.Now()
	err := turn()
	c.wall = append(c.wall, time.Since(start))
	c.self += selfCPU() - self0
	c.srv += procCPU(server.cmd.Process.Pid) - srv0
	return err
}

func (c *turnCost) median() time.Duration {
	s := slices.Clone(c.wall)
	slices.Sort(s)
	return s[len(s)/2]
}

func (c *turnCost) selfCPU() float64   { return float64(c.self) / float64(len(c.wall)) }
func (c *turnCost) serverCPU() float64 { return float64(c.srv) / float64(len(c.wall)) }

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's user and system CPU time so far, from
// /proc/PID/stat (in clock ticks of 10 ms: summed over many turns it is an
// estimate, not a measure of one).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
