// Package clock is the one seam through which kitsoki reads the time, so
// tests and cassette delays can run on a clock they control. Deadlines go
// through it too (WithTimeout), so a test on a Fake clock decides when a
// deadline passes instead of racing the machine's load.
package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the wall clock.
type System struct{}

// Now returns the current time.
func (System) Now() time.Time { return time.Now() }

// Fake is a manually advanced clock for tests. Its zero value starts at the
// zero time; use NewFake for a fixed start. Functions scheduled with
// AfterFunc run when Advance reaches their time.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at time.Time
	f  func()
}

// NewFake returns a clock stopped at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the clock's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d, then runs the functions whose time
// has come, earliest first, on the calling goroutine: when Advance returns,
// a deadline it passed has been signalled.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	var due []*fakeTimer
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.at.After(f.now) {
			kept = append(kept, t)
		} else {
			due = append(due, t)
		}
	}
	clear(f.timers[len(kept):])
	f.timers = kept
	f.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// Next reports the time of the earliest function still scheduled, and
// whether there is one. A caller that moves the clock in steps (to let
// the work a fired function starts schedule its own functions within the
// same span) advances to it.
func (f *Fake) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var at time.Time
	for i, t := range f.timers {
		if i == 0 || t.at.Before(at) {
			at = t.at
		}
	}
	return at, len(f.timers) > 0
}

// AfterFunc runs fn once the clock has advanced by d (at once, on the
// calling goroutine, when d <= 0). stop unschedules it and reports whether
// it had not run yet.
func (f *Fake) AfterFunc(d time.Duration, fn func()) (stop func() bool) {
	if d <= 0 {
		fn()
		return func() bool { return false }
	}
	f.mu.Lock()
	t := &fakeTimer{at: f.now.Add(d), f: fn}
	f.timers = append(f.timers, t)
	f.mu.Unlock()
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		i := slices.Index(f.timers, t)
		if i < 0 {
			return false
		}
		f.timers = slices.Delete(f.timers, i, i+1)
		return true
	}
}

// Timers is a clock that schedules functions on its own time (Fake).
type Timers interface {
	Clock
	AfterFunc(d time.Duration, fn func()) (stop func() bool)
}

// WithTimeout is context.WithTimeout with the timeout measured on c. On the
// system clock (or any clock that is not Timers) it is context.WithTimeout.
// On a Fake the context ends when Advance moves the clock d past now, its
// Err then being context.DeadlineExceeded; ctx.Deadline does not report
// that time (it is not wall-clock time): use Remaining.
func WithTimeout(parent context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	return WithTimeoutCause(parent, c, d, context.DeadlineExceeded)
}

// WithTimeoutCause is context.WithTimeoutCause with the timeout measured on
// c, as WithTimeout: once the deadline passes, Err is
// context.DeadlineExceeded and context.Cause is cause.
func WithTimeoutCause(parent context.Context, c Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	t, ok := c.(Timers)
	if !ok {
		return context.WithTimeoutCause(parent, d, cause)
	}
	at := t.Now().Add(d)
	if pd, ok := parent.Value(deadlineKey{}).(*clockDeadline); ok && pd.c == c && pd.at.Before(at) {
		at = pd.at
	}
	cctx, cancel := context.WithCancelCause(parent)
	stop := t.AfterFunc(d, func() { cancel(cause) })
	ctx := &deadlineCtx{Context: cctx, dl: &clockDeadline{c: c, at: at}, cause: cause}
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Remaining reports how long ctx has before its deadline, measured on c: a
// deadline WithTimeout set on c is read on c, any other on the wall clock;
// the sooner counts. ok is false when ctx has no deadline.
func Remaining(ctx context.Context, c Clock) (left time.Duration, ok bool) {
	if dl, has := ctx.Deadline(); has {
		left, ok = time.Until(dl), true
	}
	if cd, has := ctx.Value(deadlineKey{}).(*clockDeadline); has && cd.c == c {
		if l := cd.at.Sub(c.Now()); !ok || l < left {
			left, ok = l, true
		}
	}
	return left, ok
}

type deadlineKey struct{}

// clockDeadline is a deadline on a clock that is not the wall clock.
type clockDeadline struct {
	c  Clock
	at time.Time
}

// deadlineCtx is a context cancelled by a clock's timer: its Err says
// DeadlineExceeded when the timer fired, as a context.WithTimeout would.
type deadlineCtx struct {
	context.Context
	dl    *clockDeadline
	cause error // what the timer cancels with
}

func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == c.cause {
		return context.DeadlineExceeded
	}
	return err
}

func (c *deadlineCtx) Value(key any) any {
	if _, ok := key.(deadlineKey); ok {
		return c.dl
	}
	return c.Context.Value(key)
}
