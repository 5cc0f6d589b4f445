package kitsoki_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki"
)

// A handler invoked with background: true runs while the caller goes on;
// Settle waits for it and returns the completion's outcome.
func TestBackgroundJobThroughTheAPI(t *testing.T) {
	release := make(chan struct{})
	slow := func(ctx context.Context, call kitsoki.Call) (map[string]any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"value": "computed"}, nil
	}
	s, _ := open(t, "testdata/bg/app.yaml", kitsoki.WithHandler("host.slow", slow))
	out := do(t, s, "go")
	if out.State != "waiting" || s.World()["last_job_id"] != "job-1" {
		t.Fatalf("after go: %s, last_job_id %v", out.State, s.World()["last_job_id"])
	}
	close(release)
	outs, err := s.Settle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []*kitsoki.Outcome{{From: "waiting", State: "finished", View: "result: computed", Says: []string{"slow done"}, Done: true, Job: "job-1"}}
	if d := cmp.Diff(want, outs); d != "" {
		t.Errorf("Settle (-want +got):\n%s", d)
	}
}

// A background handler asks; the story answers; the handler goes on with
// the answer. The same call in the foreground fails with the reason.
func TestBackgroundHandlerAsksThroughTheAPI(t *testing.T) {
	ask := func(ctx context.Context, call kitsoki.Call) (map[string]any, error) {
		a, err := kitsoki.RequestClarification(ctx, "Which value?", map[string]string{"value": "string"})
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": a}, nil
	}
	// The wall clock: the job's poll for the answer must come by itself
	// (WithStartTime's test clock moves only with cassette delays).
	s, err := kitsoki.Open("testdata/bg/app.yaml", kitsoki.WithHandler("host.slow", ask))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, s, "go")
	outs, err := s.Settle(context.Background())
	if err != nil || len(outs) != 1 || outs[0].Job != "job-1" || outs[0].State != "waiting" {
		t.Fatalf("the question: %+v %v", outs, err)
	}
	out := do(t, s, "answer job_id=job-1 answer=forty-two")
	if out.State != "waiting" {
		t.Fatalf("after answer: %s", out.State)
	}
	outs, err = s.Settle(context.Background()) // waits for the job's next poll (200 ms)
	if err != nil || len(outs) != 1 || outs[0].State != "finished" || outs[0].View != "result: forty-two" {
		t.Fatalf("the completion: %+v %v", outs, err)
	}
	_, err = kitsoki.RequestClarification(context.Background(), "?", nil)
	if want := "request_clarification: only a background job can do this (mark the invoke background: true)"; err == nil || err.Error() != want {
		t.Errorf("foreground: %v", err)
	}
}
