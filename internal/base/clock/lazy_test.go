package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Lazy on a Fake reads like WithTimeout's context: the time left, no
// wall-clock deadline, nil Err before the deadline and DeadlineExceeded
// (Done closed, the cause DeadlineExceeded) once Advance passed it, though
// no timer was scheduled until then.
func TestLazyOnFake(t *testing.T) {
	f := NewFake(t0)
	l := LazyTimeout(context.Background(), f, time.Second)
	defer l.Stop()
	if left, ok := Remaining(l, f); !ok || left != time.Second {
		t.Errorf("Remaining = %v %v, want 1s", left, ok)
	}
	if _, ok := l.Deadline(); ok {
		t.Error("a fake deadline is reported as a wall-clock one")
	}
	f.Advance(999 * time.Millisecond)
	if err := l.Err(); err != nil {
		t.Fatalf("done before the deadline: %v", err)
	}
	if len(f.timers) != 0 {
		t.Errorf("%d timers scheduled before anything waited", len(f.timers))
	}
	f.Advance(time.Millisecond)
	if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Err reported the deadline but Done is not closed")
	}
	if c := context.Cause(l); !errors.Is(c, context.DeadlineExceeded) {
		t.Errorf("Cause = %v", c)
	}
}

// Done starts the timer for the time left: Advance then ends the context
// as it would a WithTimeout one.
func TestLazyDoneStartsTheTimer(t *testing.T) {
	f := NewFake(t0)
	l := LazyTimeout(context.Background(), f, time.Second)
	defer l.Stop()
	f.Advance(400 * time.Millisecond)
	done := l.Done()
	if len(f.timers) != 1 {
		t.Fatalf("%d timers after Done, want 1", len(f.timers))
	}
	f.Advance(599 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("done 1ms early")
	default:
	}
	f.Advance(time.Millisecond)
	<-done
	if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v", err)
	}
	l.Stop()
	if len(f.timers) != 0 {
		t.Errorf("timers left: %d", len(f.timers))
	}
}

// The parent's end and Stop end a Lazy with Canceled, Done closed; a
// parent's sooner deadline on the same clock is the one Remaining reports.
func TestLazyCancelAndParent(t *testing.T) {
	f := NewFake(t0)
	parent, cancel := context.WithCancel(context.Background())
	l := LazyTimeout(parent, f, time.Second)
	defer l.Stop()
	cancel()
	if err := l.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("parent cancelled: Err = %v", err)
	}
	<-l.Done()
	l.Stop()

	s := LazyTimeout(context.Background(), f, time.Second)
	s.Stop()
	if err := s.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: Err = %v", err)
	}
	<-s.Done()
	if len(f.timers) != 0 {
		t.Errorf("timers left: %d", len(f.timers))
	}

	outer, cancelOuter := WithTimeout(context.Background(), f, 300*time.Millisecond)
	defer cancelOuter()
	inner := LazyTimeout(outer, f, time.Minute)
	defer inner.Stop()
	if left, _ := Remaining(inner, f); left != 300*time.Millisecond {
		t.Errorf("Remaining under a sooner parent = %v", left)
	}
	f.Advance(300 * time.Millisecond)
	if err := inner.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the parent's deadline: Err = %v", err)
	}
}

// On the wall clock a Lazy reports its deadline, ends when it passes
// (Done started late still closes), and making, reading and stopping one
// that nothing waits on allocates only the Lazy itself.
func TestLazyOnSystem(t *testing.T) {
	before := time.Now()
	l := LazyTimeout(context.Background(), System{}, time.Hour)
	dl, ok := l.Deadline()
	if !ok || dl.Before(before.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
		t.Errorf("Deadline = %v %v, want an hour from now", dl, ok)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
	l.Stop()
	if err := l.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: Err = %v", err)
	}

	short := LazyTimeout(context.Background(), System{}, time.Millisecond)
	defer short.Stop()
	<-short.Done()
	if err := short.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", err)
	}

	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		l := LazyTimeout(ctx, System{}, time.Hour)
		_ = l.Err()
		l.Stop()
	}); n > 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// A context derived from a Lazy starts its timer and ends with it, as a
// context derived from WithTimeout's does (on a Fake the child reads
// Canceled, its cause DeadlineExceeded, in both cases).
func TestLazyDerived(t *testing.T) {
	f := NewFake(t0)
	l := LazyTimeout(context.Background(), f, time.Second)
	defer l.Stop()
	child, cancel := context.WithCancel(l)
	defer cancel()
	if len(f.timers) != 1 {
		t.Fatalf("%d timers after deriving a context, want 1", len(f.timers))
	}
	w, stop := WithTimeout(context.Background(), f, time.Second)
	defer stop()
	wchild, wcancel := context.WithCancel(w)
	defer wcancel()
	f.Advance(time.Second)
	<-child.Done()
	<-wchild.Done()
	if child.Err() != wchild.Err() || context.Cause(child) != context.Cause(wchild) {
		t.Errorf("child Err %v (cause %v), want %v (cause %v) as under WithTimeout",
			child.Err(), context.Cause(child), wchild.Err(), context.Cause(wchild))
	}
	if !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Errorf("cause = %v", context.Cause(child))
	}
}
