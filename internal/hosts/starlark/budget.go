package starlark

import (
	"fmt"
	"runtime"

	"go.starlark.net/starlark"
)

// How the memory bound is kept (docs/hosts.md, "Memory"):
//
//   - Every operation of a script that can make a large value in one step
//     (see guards.go) works out the size of what it would make before
//     making it and charges the call's budget. A charge that would take the
//     heap's growth since the call began past the limit fails the call
//     instead (KindMemory), so nothing of that size is allocated.
//   - The heap is read (runtime/metrics, about 1.6µs) when a charge is large
//     (largeCharge) or the small charges since the last reading add up to
//     readEvery; so a script of small steps pays almost nothing.
//   - A step hook reads the heap every stepCheckEvery steps, every step
//     once the growth is past three quarters of the limit: it catches what
//     no guard charges (a dict's table doubling, a list comprehension's
//     appends), each of which is at most a copy of one value the bound
//     already admitted.
//   - Before refusing, the collector runs (at most maxForcedGC times a
//     call), since the heap reading counts garbage not yet swept.

const (
	largeCharge    = 1 << 20 // a charge from which the heap is read at once
	readEvery      = 4 << 20 // the small charges between two readings
	stepCheckEvery = 256     // steps between two heap readings, below half the limit
	stepCheckNear  = 16      // between half and three quarters of the limit
	maxForcedGC    = 8       // forced collections per call before a refusal stands
)

// budget is one call's memory account.
type budget struct {
	limit   int64 // bytes the heap may grow by during the call
	base    int64 // the heap when the call began
	used    int64 // the growth at the last reading
	pending int64 // bytes charged since the last reading
	gcs     int   // collections forced so far
	heap    func() int64

	exceeded string // why the call was stopped, once it was
}

func newBudget(limit uint64) *budget {
	b := &budget{limit: int64(min(limit, 1<<62)), heap: func() int64 { return int64(heapBytes()) }}
	b.base = b.heap()
	return b
}

// read measures the heap's growth since the call began.
func (b *budget) read() {
	b.used = max(b.heap()-b.base, 0)
	b.pending = 0
}

// over reports whether growing the heap by n more bytes passes the limit,
// after a forced collection when the reading says so.
func (b *budget) over(n int64) bool {
	if b.used+n <= b.limit {
		return false
	}
	if b.gcs < maxForcedGC {
		b.gcs++
		runtime.GC()
		b.read()
	}
	return b.used+n > b.limit
}

// charge accounts for a value of n bytes an operation is about to make,
// what names the operation for the error. It fails, and marks the call
// as stopped, when the value would not fit.
func (b *budget) charge(n int64, what func() string) error {
	if n <= 0 {
		return nil
	}
	b.pending += n
	if n < largeCharge && b.pending < readEvery {
		return nil
	}
	b.read()
	if b.over(n) {
		b.exceeded = fmt.Sprintf("%s would need %s more, with the heap already %s larger than when the call began",
			what(), mib(n), mib(b.used))
		return &Error{Kind: KindMemory, Msg: b.exceeded}
	}
	return nil
}

// step is the step hook's check; it returns the steps until the next one.
func (b *budget) step() (ok bool, next uint64) {
	b.read()
	if b.used > b.limit && b.over(0) {
		b.exceeded = fmt.Sprintf("the heap grew by %s", mib(b.used))
		return false, 0
	}
	if b.used > b.limit/4*3 {
		return true, 1
	}
	if b.used > b.limit/2 {
		return true, stepCheckNear
	}
	return true, stepCheckEvery
}

// mib words a byte count for an error.
func mib(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// budgetKey is the thread-local key of a call's budget.
const budgetKey = "kitsoki.budget"

// budgetOf returns the budget of the call thread runs; nil outside a call
// (a guard then charges nothing).
func budgetOf(thread *starlark.Thread) *budget {
	b, _ := thread.Local(budgetKey).(*budget)
	return b
}

// charge charges thread's budget.
func charge(thread *starlark.Thread, n int64, what func() string) error {
	if b := budgetOf(thread); b != nil {
		return b.charge(n, what)
	}
	return nil
}
