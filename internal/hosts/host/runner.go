package host

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a call goroutine waits for the next call before
// it exits.
const workerIdle = 30 * time.Second

// runner runs agent calls on reused goroutines.
//
// An agent call runs on a goroutine of its own so the caller can stop
// waiting at the hard deadline and leave a stuck agent behind. Starting a
// fresh goroutine per call would also grow a fresh stack per call: an
// HTTP client or a JSON codec needs tens of kilobytes, and growing to that
// by repeated copying cost more than the rest of a local-model call's
// bookkeeping. A worker keeps its grown stack from one call to the next.
//
// Workers are started on demand, one per call in flight; an idle worker
// exits after workerIdle, or at once when the runner is stopped. The zero
// value is not usable; use newRunner.
type runner struct {
	jobs chan func() // unbuffered: a send succeeds only if a worker waits
	quit chan struct{}
	stop sync.Once

	started atomic.Int64 // workers started, for tests
}

func newRunner() *runner {
	return &runner{jobs: make(chan func()), quit: make(chan struct{})}
}

// do runs f on an idle worker, or on a new one if none is waiting.
func (r *runner) do(f func()) {
	select {
	case r.jobs <- f:
	default:
		r.started.Add(1)
		go r.work(f)
	}
}

func (r *runner) work(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil
		idle.Reset(workerIdle)
		select {
		case f = <-r.jobs:
		case <-idle.C:
			return
		case <-r.quit:
			return
		}
	}
}

// close makes idle workers exit; calls still running finish first. Later
// calls to do still run, each on a goroutine that then exits.
func (r *runner) close() { r.stop.Do(func() { close(r.quit) }) }
