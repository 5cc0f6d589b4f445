package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// runTurns opens a session of the hello story as kind says (mem: the
// in-memory flow; process or machine: a durable session at that level),
// runs turn 0 and n turns (greet, again, …) and returns how long it took.
func runTurns(tb testing.TB, st *story.Story, kind string, n int) time.Duration {
	tb.Helper()
	cfg := Config{Agents: Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}},
		Session: &Session{ID: "bench"}}
	if kind != "mem" {
		cfg.Trace = Trace{Path: filepath.Join(tb.TempDir(), "s.jsonl"), NoSync: kind == "process",
			Header: trace.HeaderInfo{AppID: st.App.ID, SessionID: "bench", StoryHash: st.ContentHash}}
		cfg.Session.Journal = true
	}
	ctx := context.Background()
	c0 := cpuTime()
	rt, err := Open(st, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	sess := rt.Session()
	if _, err := sess.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		var err error
		if i%2 == 0 {
			_, err = sess.Turn(ctx, "greet", map[string]any{"name": "P" + strconv.Itoa(i)}, "")
		} else {
			_, err = sess.Turn(ctx, "again", nil, "")
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := rt.Close(); err != nil {
		tb.Fatal(err)
	}
	return cpuTime() - c0
}

// cpuTime is the process's user and system CPU time: on a shared machine
// under load, wall time mostly measures the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadHello(tb testing.TB) *story.Story {
	tb.Helper()
	st, err := story.Load("../../../stories/hello/app.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// BenchmarkDurableSession1000Turns runs the same 1000 turns of the hello
// story in memory (the flow's sink, no journal) and as durable sessions at
// both levels, interleaved in one run, and reports each level's process
// CPU time (user and system) relative to memory (issue 17: process at most
// 1.3×). The machine level's fsyncs mostly wait on the disk, which CPU
// time does not count: its wall time is reported too.
func BenchmarkDurableSession1000Turns(b *testing.B) {
	st := loadHello(b)
	var mem, proc, mach time.Duration
	var machWall time.Duration
	i := 0
	for b.Loop() {
		// the order rotates, so none always runs first (on a cold cache)
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				mem += runTurns(b, st, "mem", 1000)
			case 1:
				proc += runTurns(b, st, "process", 1000)
			case 2:
				w0 := time.Now()
				mach += runTurns(b, st, "machine", 1000)
				machWall += time.Since(w0)
			}
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(mem.Milliseconds())/n, "mem-cpu-ms")
	b.ReportMetric(float64(proc.Milliseconds())/n, "process-cpu-ms")
	b.ReportMetric(float64(mach.Milliseconds())/n, "machine-cpu-ms")
	b.ReportMetric(float64(machWall.Milliseconds())/n, "machine-wall-ms")
	b.ReportMetric(float64(proc)/float64(mem), "process/mem")
	b.ReportMetric(float64(mach)/float64(mem), "machine/mem")
}

// journalOf writes a durable session of n turns and returns its path.
func journalOf(tb testing.TB, st *story.Story, n int) string {
	p, _, _ := journalLive(tb, st, n)
	return p
}

// journalLive is journalOf, with the state and world the live session
// ended with.
func journalLive(tb testing.TB, st *story.Story, n int) (string, string, map[string]any) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "s.jsonl")
	rt, err := Open(st, Config{Agents: Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}},
		Session: &Session{ID: "bench", Journal: true}, Trace: Trace{Path: path, NoSync: true}})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	sess := rt.Session()
	if _, err := sess.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if i%2 == 0 {
			_, err = sess.Turn(ctx, "greet", map[string]any{"name": "P" + strconv.Itoa(i)}, "")
		} else {
			_, err = sess.Turn(ctx, "again", nil, "")
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	state, world := sess.State(), orchestratorCopy(sess.World())
	rt.Close()
	return path, state, world
}

// resumeOnce loads the journal and opens the session it holds, ready for
// its next turn.
func resumeOnce(tb testing.TB, st *story.Story, path string) time.Duration {
	tb.Helper()
	t0 := time.Now()
	j, err := session.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := Open(st, Config{Agents: Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}},
		Session: &Session{ID: "bench", Resume: &Resume{Journal: j}}, Trace: Trace{Path: path, NoSync: true}})
	if err != nil {
		tb.Fatal(err)
	}
	d := time.Since(t0)
	rt.Close()
	return d
}

// BenchmarkResume times resuming a session after 100 and after 10,000
// turns in one run (issue 17: the second at most 2× the first): the cost
// grows with the turns since the last snapshot, not with the journal.
func BenchmarkResume(b *testing.B) {
	st := loadHello(b)
	short, long := journalOf(b, st, 100), journalOf(b, st, 10000)
	fi, _ := os.Stat(long)
	var s, l time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			s += resumeOnce(b, st, short)
			l += resumeOnce(b, st, long)
		} else {
			l += resumeOnce(b, st, long)
			s += resumeOnce(b, st, short)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(s.Microseconds())/n, "after100-µs")
	b.ReportMetric(float64(l.Microseconds())/n, "after10000-µs")
	b.ReportMetric(float64(l)/float64(s), "ratio")
	b.ReportMetric(float64(fi.Size())/1e6, "journal10000-MB")
}

// TestResumeAfterManyTurns checks a resume after an unaligned number of
// turns (not on a snapshot) rebuilds the world the live session had.
func TestResumeAfterManyTurns(t *testing.T) {
	st := loadHello(t)
	path, state, world := journalLive(t, st, 131)
	j, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	session.Retype(st, j.World)
	if diff := cmp.Diff(session.Normalize(world), j.World); diff != "" || j.Turn != 131 || j.State != state {
		t.Errorf("turn %d state %q (live %q); world (-live +journal):\n%s", j.Turn, j.State, state, diff)
	}
}

func orchestratorCopy(w map[string]any) map[string]any {
	return orchestrator.DeepCopy(w).(map[string]any)
}
