package cassette

import (
	"context"
	"fmt"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// advancer is a clock that can jump (clock.Fake). Delays on such a clock
// are instant: the clock moves by the delay instead of the test waiting.
type advancer interface {
	Advance(d time.Duration)
}

// Sleep waits out an episode's delay on the cassette's clock.
func (c *Cassette) Sleep(ctx context.Context, ep *Episode) error {
	return SleepOn(ctx, c.clock, ep.Delay, fmt.Sprintf("episode %q", ep.ID))
}

// SleepOn waits d on clk. On a clock that can jump the wait is instant, but
// a delay that would outlast the context's deadline still fails as the real
// wait would. A cancelled or expired context ends a real wait early.
func SleepOn(ctx context.Context, clk clock.Clock, d time.Duration, what string) error {
	if d <= 0 {
		return nil
	}
	if a, ok := clk.(advancer); ok {
		if left, ok := clock.Remaining(ctx, clk); ok && d >= left {
			return fmt.Errorf("%s: delay %s outlasts the call's deadline: %w", what, d, context.DeadlineExceeded)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: delay %s: %w", what, d, err)
		}
		a.Advance(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: delay %s interrupted: %w", what, d, ctx.Err())
	}
}
