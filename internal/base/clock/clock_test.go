package clock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// On a Fake, a deadline passes when Advance says so, never on its own.
func TestWithTimeoutOnFake(t *testing.T) {
	f := NewFake(t0)
	ctx, cancel := WithTimeout(context.Background(), f, time.Second)
	defer cancel()
	if left, ok := Remaining(ctx, f); !ok || left != time.Second {
		t.Errorf("Remaining = %v %v, want 1s", left, ok)
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("a fake deadline is reported as a wall-clock one")
	}
	f.Advance(999 * time.Millisecond)
	if err := ctx.Err(); err != nil {
		t.Fatalf("done before the deadline: %v", err)
	}
	f.Advance(time.Millisecond)
	select {
	case <-ctx.Done():
	default:
		t.Fatal("not done once Advance passed the deadline")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", err)
	}
	if left, _ := Remaining(ctx, f); left != 0 {
		t.Errorf("Remaining after the deadline = %v", left)
	}
}

func TestWithTimeoutCancelAndParent(t *testing.T) {
	f := NewFake(t0)
	ctx, cancel := WithTimeout(context.Background(), f, time.Second)
	cancel()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: Err = %v", err)
	}
	f.Advance(time.Hour) // the stopped timer does not run
	if len(f.timers) != 0 {
		t.Errorf("timers left: %d", len(f.timers))
	}

	// A child's remaining time is the sooner of its own and its parent's.
	outer, cancelOuter := WithTimeout(context.Background(), f, time.Second)
	defer cancelOuter()
	inner, cancelInner := WithTimeout(outer, f, time.Minute)
	defer cancelInner()
	if left, _ := Remaining(inner, f); left != time.Second {
		t.Errorf("inner Remaining = %v, want the parent's 1s", left)
	}
	f.Advance(time.Second)
	if !errors.Is(inner.Err(), context.Canceled) && !errors.Is(inner.Err(), context.DeadlineExceeded) {
		t.Errorf("inner not ended with its parent: %v", inner.Err())
	}
	if !errors.Is(context.Cause(inner), context.DeadlineExceeded) {
		t.Errorf("inner cause = %v", context.Cause(inner))
	}
}

// Timers fire earliest first; one scheduled at 0 runs at once.
func TestFakeAfterFuncOrder(t *testing.T) {
	f := NewFake(t0)
	var got []int
	f.AfterFunc(3*time.Second, func() { got = append(got, 3) })
	f.AfterFunc(time.Second, func() { got = append(got, 1) })
	stop := f.AfterFunc(2*time.Second, func() { got = append(got, 2) })
	f.AfterFunc(0, func() { got = append(got, 0) })
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	f.Advance(5 * time.Second)
	if want := []int{0, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// On the system clock WithTimeout is context.WithTimeout.
func TestWithTimeoutOnSystem(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), System{}, time.Hour)
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("no deadline")
	}
	if left, ok := Remaining(ctx, System{}); !ok || left <= 0 || left > time.Hour {
		t.Errorf("Remaining = %v %v", left, ok)
	}
	if _, ok := Remaining(context.Background(), System{}); ok {
		t.Error("Remaining of a context without a deadline is ok")
	}
}

// WithTimeoutCause: Err says DeadlineExceeded, Cause the given cause, and a
// parent's cancellation is not mistaken for the deadline.
func TestWithTimeoutCauseOnFake(t *testing.T) {
	errLate := errors.New("too late")
	f := NewFake(t0)
	ctx, cancel := WithTimeoutCause(context.Background(), f, time.Second, errLate)
	defer cancel()
	f.Advance(time.Second)
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), errLate) {
		t.Errorf("Err = %v, Cause = %v", ctx.Err(), context.Cause(ctx))
	}

	parent, stop := context.WithCancel(context.Background())
	ctx2, cancel2 := WithTimeoutCause(parent, f, time.Second, errLate)
	defer cancel2()
	stop()
	if !errors.Is(ctx2.Err(), context.Canceled) || errors.Is(context.Cause(ctx2), errLate) {
		t.Errorf("parent cancelled: Err = %v, Cause = %v", ctx2.Err(), context.Cause(ctx2))
	}
}
