package testrunner

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/testsupport/longflow"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// runGrowth runs a flow of n turns and returns how far the live heap grew
// past what the prepared flow (story, fixture, cassette) holds: what the
// run itself keeps. The live heap is read after a collection, every few
// milliseconds while the flow runs.
func runGrowth(t *testing.T, n int) uint64 {
	t.Helper()
	app := longflow.Write(t, n)
	fxs, err := LoadFixtures(app, "")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	f, err := r.Prepare(fxs[0])
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	// Each sample is the heap after a collection; a sample can also hold
	// what was allocated between the collection and the read, which on a
	// loaded machine is a spike, not memory the run keeps. What the run
	// keeps shows in every sample after it is kept: so the growth is the
	// highest value that window consecutive samples all reach.
	const window = 5
	var samples []uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			samples = append(samples, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	res := f.Run(context.Background())
	close(stop)
	<-done
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(res)
	peak := ms.HeapAlloc // what the finished run holds: its results
	for i := 0; i+window <= len(samples); i++ {
		peak = max(peak, slices.Min(samples[i:i+window]))
	}
	if !res.Passed {
		t.Fatalf("the %d-turn flow failed: %+v", n, res.Turns[len(res.Turns)-1])
	}
	if peak > base {
		return peak - base
	}
	return 0
}

// A flow's memory is flat in its length: the runner keeps one turn's trace
// events, and the trace's lines only when it is asked for the trace
// (before, every event was kept twice: 13 KB a turn).
func TestFlowMemoryFlatInLength(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an 8,000-turn flow")
	}
	short, long := runGrowth(t, 500), runGrowth(t, 8000)
	perTurn := (float64(long) - float64(short)) / 7500
	t.Logf("the run grew the heap %.1f MB over 500 turns, %.1f MB over 8,000: %.0f bytes a turn", float64(short)/1e6, float64(long)/1e6, perTurn)
	if perTurn > 2000 {
		t.Errorf("a flow keeps %.0f bytes a turn; want it flat (under 2 KB a turn: its turn results)", perTurn)
	}
}
