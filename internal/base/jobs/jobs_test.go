package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sleeper(d time.Duration, data map[string]any) Func {
	return func(ctx context.Context) Result {
		if err := Sleep(ctx, d); err != nil {
			return Result{Infra: err}
		}
		return Result{Data: data}
	}
}

func settle(t *testing.T, s *Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

type ended struct {
	ID     string
	Status Status
	At     time.Duration
}

func take(s *Scheduler) []ended {
	var out []ended
	for _, n := range s.Take() {
		out = append(out, ended{n.Job.ID, n.Job.Status, n.At.Sub(t0)})
	}
	return out
}

// The fake clock decides which job ends first, not the order they were
// started in or the goroutines' luck.
func TestClockOrdersCompletions(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(clk)
	defer s.Close()
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		if _, err := s.Submit(Spec{Handler: "host.run", Run: sleeper(d, map[string]any{"d": d.String()})}); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, s)
	if got := take(s); got != nil {
		t.Fatalf("before the clock moved: %v", got)
	}
	clk.Advance(1500 * time.Millisecond)
	settle(t, s)
	if diff := cmp.Diff([]ended{{"job-2", Done, time.Second}}, take(s)); diff != "" {
		t.Errorf("after 1.5s (-want +got):\n%s", diff)
	}
	clk.Advance(5 * time.Second)
	settle(t, s)
	want := []ended{{"job-3", Done, 2 * time.Second}, {"job-1", Done, 3 * time.Second}}
	if diff := cmp.Diff(want, take(s)); diff != "" {
		t.Errorf("after 6.5s (-want +got):\n%s", diff)
	}
}

func TestStatusesAndErrors(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(clk)
	defer s.Close()
	id1, _ := s.Submit(Spec{Handler: "h.ok", Run: func(context.Context) Result { return Result{Data: map[string]any{}} }})
	id2, _ := s.Submit(Spec{Handler: "h.domain", Run: func(context.Context) Result { return Result{Err: errors.New("exit 3")} }})
	id3, _ := s.Submit(Spec{Handler: "h.infra", Run: func(context.Context) Result { return Result{Infra: errors.New("no such host")} }})
	id4, _ := s.Submit(Spec{Handler: "h.slow", Run: sleeper(time.Hour, nil)})
	settle(t, s)
	if _, err := s.Cancel(id4); err != nil {
		t.Fatal(err)
	}
	settle(t, s)
	got := map[string]Info{}
	for _, i := range s.List() {
		got[i.ID] = i
	}
	for id, want := range map[string]Status{id1: Done, id2: Failed, id3: Failed, id4: Cancelled} {
		if got[id].Status != want {
			t.Errorf("%s: status %s, want %s", id, got[id].Status, want)
		}
	}
	if got[id2].Error != "exit 3" || got[id3].Error != "no such host" {
		t.Errorf("errors: %q %q", got[id2].Error, got[id3].Error)
	}
	_, err := s.Cancel(id1)
	if want := "background job job-1 has already ended (done); only a running job can be cancelled"; err == nil || err.Error() != want {
		t.Errorf("cancel of an ended job: %v\nwant %s", err, want)
	}
	_, err = s.Get("job-9")
	if want := `no background job "job-9" (jobs: job-1, job-2, job-3, job-4)`; err == nil || err.Error() != want {
		t.Errorf("unknown job: %v\nwant %s", err, want)
	}
	if _, err := New(clk).Get("job-1"); err == nil || err.Error() != `no background job "job-1": this session has started none` {
		t.Errorf("no jobs: %v", err)
	}
}

func TestClarificationRoundTrip(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(clk)
	defer s.Close()
	id, _ := s.Submit(Spec{Handler: "host.deploy", Run: func(ctx context.Context) Result {
		a, err := RequestClarification(ctx, Question{Prompt: "Which environment?"})
		if err != nil {
			return Result{Infra: err}
		}
		return Result{Data: map[string]any{"env": a}}
	}})
	settle(t, s)
	n := s.Take()
	if len(n) != 1 || n[0].Kind != NoticeAwaiting || n[0].Job.Question.Prompt != "Which environment?" {
		t.Fatalf("notices: %+v", n)
	}
	if i, _ := s.Get(id); i.Status != AwaitingInput {
		t.Fatalf("status %s", i.Status)
	}
	if _, err := s.Answer(id, "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Answer(id, "again"); err == nil || err.Error() != "background job job-1 already has an answer it has not read yet" {
		t.Errorf("second answer: %v", err)
	}
	settle(t, s)
	if got := s.Take(); got != nil {
		t.Fatalf("the answer was read before the next poll: %+v", got)
	}
	clk.Advance(PollInterval)
	settle(t, s)
	n = s.Take()
	if len(n) != 1 || n[0].Kind != NoticeEnded || n[0].Result.Data["env"] != "prod" {
		t.Fatalf("after the poll: %+v", n)
	}
	if _, err := s.Answer(id, "x"); err == nil || err.Error() != "background job job-1 is not waiting for an answer (status done)" {
		t.Errorf("answer to an ended job: %v", err)
	}
}

func TestOutsideAJob(t *testing.T) {
	if err := Sleep(context.Background(), time.Second); !errors.Is(err, ErrNotInJob) {
		t.Errorf("Sleep: %v", err)
	}
	_, err := RequestClarification(context.Background(), Question{Prompt: "?"})
	if want := "request_clarification: only a background job can do this (mark the invoke background: true)"; err == nil || err.Error() != want {
		t.Errorf("RequestClarification: %v", err)
	}
}

// Close cancels what still runs and waits for it; nothing starts after.
func TestCloseCancelsAndWaits(t *testing.T) {
	s := New(clock.NewFake(t0))
	returned := make(chan struct{})
	s.Submit(Spec{Handler: "h", Run: func(ctx context.Context) Result {
		defer close(returned)
		<-ctx.Done()
		return Result{Infra: ctx.Err()}
	}})
	s.Close()
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the job did")
	}
	if i := s.List()[0]; i.Status != Cancelled {
		t.Errorf("status %s, want cancelled", i.Status)
	}
	if _, err := s.Submit(Spec{Handler: "h", Run: sleeper(0, nil)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}

// On the system clock Sleep is a real timer, and Settle waits for a job
// asleep in it (it wakes by itself), but not for one polling for an
// answer nobody has given.
func TestSystemClock(t *testing.T) {
	s := New(nil)
	defer s.Close()
	s.Submit(Spec{Handler: "h", Run: sleeper(time.Millisecond, map[string]any{"ok": true})})
	settle(t, s)
	if n := s.Take(); len(n) != 1 || n[0].Job.Status != Done {
		t.Fatalf("after Settle: %+v", n)
	}
	id, _ := s.Submit(Spec{Handler: "ask", Run: func(ctx context.Context) Result {
		a, err := RequestClarification(ctx, Question{Prompt: "?"})
		return Result{Data: map[string]any{"a": a}, Infra: err}
	}})
	settle(t, s)
	if n := s.Take(); len(n) != 1 || n[0].Kind != NoticeAwaiting {
		t.Fatalf("question: %+v", n)
	}
	s.Answer(id, "yes")
	settle(t, s) // the next poll reads it
	if n := s.Take(); len(n) != 1 || n[0].Job.Status != Done || n[0].Result.Data["a"] != "yes" {
		t.Fatalf("after the answer: %+v", n)
	}
}
