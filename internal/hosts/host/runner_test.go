package host

import (
	"runtime"
	"testing"
	"time"
)

// TestRunnerReusesIdleWorker: calls made one after another run on a few
// reused goroutines, not one new goroutine each.
func TestRunnerReusesIdleWorker(t *testing.T) {
	r := newRunner()
	defer r.close()
	for range 100 {
		done := make(chan struct{})
		r.do(func() { close(done) })
		<-done
	}
	if n := r.started.Load(); n > 10 {
		t.Errorf("100 sequential calls started %d workers, want a few reused ones", n)
	}
}

// TestRunnerRunsCallsConcurrently: a call that blocks does not hold up the
// next one (the hard deadline depends on it).
func TestRunnerRunsCallsConcurrently(t *testing.T) {
	r := newRunner()
	defer r.close()
	block := make(chan struct{})
	defer close(block)
	r.do(func() { <-block })
	ran := make(chan struct{})
	r.do(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("second call did not run while the first was blocked")
	}
}

// TestRunnerCloseStopsIdleWorkers: after close no worker is left waiting.
func TestRunnerCloseStopsIdleWorkers(t *testing.T) {
	base := runtime.NumGoroutine()
	r := newRunner()
	for range 3 {
		done := make(chan struct{})
		r.do(func() { close(done) })
		<-done
	}
	r.close()
	r.close() // twice is fine
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base })
	// A call after close still runs.
	done := make(chan struct{})
	r.do(func() { close(done) })
	<-done
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
