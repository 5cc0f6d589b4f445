package kitsoki_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/pkg/kitsoki"
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
