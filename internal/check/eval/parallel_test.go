package eval

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// --parallel N: at most N calls are in flight at once, and the run does
// reach N. The first N calls wait until N are in flight (so a limiter that
// serialised calls would time out); every call then lingers a little, so a
// run without a limit would put all 60 calls in flight together.
func TestRunParallelLimit(t *testing.T) {
	for _, n := range []int{1, 3} {
		c := mustCheck(t, filepath.Join("testdata", "audit", "evals", "audit.yaml"))
		reg := testAgents(t, c.Story)
		var (
			mu       sync.Mutex
			inFlight int
			maxSeen  int
		)
		full := make(chan struct{})
		var once sync.Once
		ask := func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
			req := call.Request
			mu.Lock()
			inFlight++
			maxSeen = max(maxSeen, inFlight)
			if inFlight == n {
				once.Do(func() { close(full) })
			}
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
			select {
			case <-full:
			case <-time.After(5 * time.Second):
				return nil, agent.Errorf(agent.KindPluginCrash, "never saw %d calls in flight", n)
			}
			time.Sleep(2 * time.Millisecond)
			_, d := policy(req.Prompt)
			return answer(map[string]any{"decision": d, "reason": "p"}, nil)
		}
		for _, a := range []string{"agent.good", "agent.flaky", "agent.bad"} {
			reg.Register(a, agent.AgentFunc(ask))
		}
		r, err := Run(context.Background(), c, Options{Registry: reg, Parallel: n, Clock: clock.NewFake(t0), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if maxSeen != n {
			t.Errorf("--parallel %d: at most %d calls were in flight at once", n, maxSeen)
		}
		for _, cand := range r.Candidates {
			if cand.ExamplesRun != 20 || cand.ComparatorPassRate != 1 {
				t.Errorf("--parallel %d: %s ran %d calls, pass rate %v", n, cand.Label(), cand.ExamplesRun, cand.ComparatorPassRate)
			}
		}
	}
}
