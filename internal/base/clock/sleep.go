package clock

import (
	"context"
	"time"
)

// Sleeper is a clock that waits on its own time: a Fake moves itself
// forward, a Temporal workflow's clock sleeps on a durable timer.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// Sleep waits d on c: through c's own Sleep when it is a Sleeper, else on
// a wall-clock timer. It returns ctx's error when ctx ends first.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if s, ok := c.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Sleep moves the fake clock forward by d (running what falls due), as a
// wait on simulated time: no one else would move it while the caller
// waits.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		f.Advance(d)
	}
	return nil
}
