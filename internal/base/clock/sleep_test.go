package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepOnFakeMovesTheClock(t *testing.T) {
	f := NewFake(time.Unix(100, 0))
	fired := false
	f.AfterFunc(2*time.Second, func() { fired = true })
	if err := Sleep(context.Background(), f, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := f.Now(); !got.Equal(time.Unix(103, 0)) || !fired {
		t.Errorf("now %v, fired %v; want 103 s and the timer fired", got.Unix(), fired)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, f, time.Second); !errors.Is(err, context.Canceled) || !f.Now().Equal(time.Unix(103, 0)) {
		t.Errorf("cancelled sleep: %v, now %v", err, f.Now().Unix())
	}
}

func TestSleepOnSystemEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, System{}, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), System{}, 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
}
