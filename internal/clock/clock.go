// Package clock is the one seam through which kitsoki reads the time, so
// tests and cassette delays can run on a clock they control.
package clock

import (
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
// zero time; use NewFake for a fixed start.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a clock stopped at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the clock's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}
