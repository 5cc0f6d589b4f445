package clock

import (
	"context"
	"sync"
	"time"
)

// Lazy is a context with a deadline on a clock, as WithTimeout gives, for
// work that may never wait on it (an agent call asked on the caller's
// goroutine): the deadline is fixed when it is made, but the timer and the
// cancellation machinery behind it are started only when something first
// needs them: Done, a context derived from it, or Err once the deadline
// has passed or the parent has ended (Err then reports what a WithTimeout
// context would, with Done already closed). Work that only reads Err and
// the deadline costs no timer at all. Stop releases it, as the cancel
// function of WithTimeout does. A Lazy is safe for concurrent use.
type Lazy struct {
	parent context.Context
	c      Clock
	at     time.Time // the deadline, on c
	dl     clockDeadline
	hasDL  bool // dl is reported (c is a Timers clock)

	mu      sync.Mutex
	inner   context.Context // the WithTimeout context, once started
	cancel  context.CancelFunc
	stopped bool
}

// LazyTimeout returns a Lazy that ends d from now on c, or when parent
// ends.
func LazyTimeout(parent context.Context, c Clock, d time.Duration) *Lazy {
	l := &Lazy{parent: parent, c: c}
	if _, ok := c.(Timers); ok {
		l.at = c.Now().Add(d)
		l.dl, l.hasDL = clockDeadline{c: c, at: l.at}, true
		if pd, ok := parent.Value(deadlineKey{}).(*clockDeadline); ok && pd.c == c && pd.at.Before(l.at) {
			l.dl.at = pd.at
		}
	} else {
		l.at = time.Now().Add(d)
	}
	return l
}

// started returns the started context, starting it if need be.
func (l *Lazy) started() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inner == nil {
		if _, ok := l.c.(Timers); ok {
			l.inner, l.cancel = WithTimeout(l.parent, l.c, l.at.Sub(l.c.Now()))
		} else {
			l.inner, l.cancel = context.WithDeadline(l.parent, l.at)
		}
		if l.stopped {
			l.cancel()
		}
	}
	return l.inner
}

// settled returns the started context, starting it first if the context
// has ended (the deadline passed, the parent ended, Stop); nil while it
// has not started and is still running.
func (l *Lazy) settled() context.Context {
	l.mu.Lock()
	inner, stopped := l.inner, l.stopped
	l.mu.Unlock()
	if inner != nil {
		return inner
	}
	if stopped || l.parent.Err() != nil || !l.c.Now().Before(l.at) {
		return l.started()
	}
	return nil
}

// Deadline is the parent's deadline or, on the wall clock, this one if it
// is sooner. (A deadline on another clock is not wall-clock time: read it
// with Remaining.)
func (l *Lazy) Deadline() (time.Time, bool) {
	pd, ok := l.parent.Deadline()
	if l.hasDL {
		return pd, ok
	}
	if ok && pd.Before(l.at) {
		return pd, true
	}
	return l.at, true
}

// Done starts the timer (once) and returns the channel it closes.
func (l *Lazy) Done() <-chan struct{} { return l.started().Done() }

// Err is nil while the deadline is ahead, the parent has not ended and
// Stop has not been called; otherwise what the WithTimeout context would
// say (it is started then, so Done is closed).
func (l *Lazy) Err() error {
	if inner := l.settled(); inner != nil {
		return inner.Err()
	}
	return nil
}

// Value answers the deadline key itself (Remaining) and passes every other
// key on: to the started context once there is one (or once the context
// has ended, so context.Cause reads its cause), else to the parent.
func (l *Lazy) Value(key any) any {
	if _, ok := key.(deadlineKey); ok && l.hasDL {
		return &l.dl
	}
	if inner := l.settled(); inner != nil {
		return inner.Value(key)
	}
	return l.parent.Value(key)
}

// Stop ends the context and releases its timer, if one was started.
func (l *Lazy) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.cancel != nil {
		l.cancel()
	}
}
