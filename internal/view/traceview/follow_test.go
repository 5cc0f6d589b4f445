package traceview

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// TestFollow appends a recorded trace in three steps while Follow polls
// on ticks the test sends: a turn is printed once it has ended, and when
// the writer lets go the output is exactly the whole report.
func TestFollow(t *testing.T) {
	full, err := os.ReadFile("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cut1 := bytes.Index(full, []byte(`{"turn":1,"seq":10,`))
	cut2 := bytes.Index(full, []byte(`{"turn":2,"seq":2,`))
	path := filepath.Join(t.TempDir(), "run.jsonl")
	var writing atomic.Bool
	writing.Store(true)
	tick := make(chan time.Time)
	out := &testkit.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Follow(context.Background(), out, path, FollowOptions{Tick: tick, Writing: func(string) bool { return writing.Load() }})
	}()
	// step waits until Follow has finished one poll: the second send is
	// taken only once the poll after the first is done.
	step := func() { tick <- time.Time{}; tick <- time.Time{} }
	step() // nothing written yet
	if got := out.String(); got != "" {
		t.Fatalf("printed %q before the trace existed", got)
	}
	os.WriteFile(path, full[:cut1], 0o644)
	step()
	got := out.String()
	if !bytes.Contains([]byte(got), []byte("turn 0")) || bytes.Contains([]byte(got), []byte("turn 1")) {
		t.Fatalf("after the first part: %q (want turn 0 only: turn 1 has not ended)", got)
	}
	os.WriteFile(path, full[:cut2], 0o644)
	step()
	if got := out.String(); !bytes.Contains([]byte(got), []byte("turn 1")) || bytes.Contains([]byte(got), []byte("turn 2")) {
		t.Fatalf("after the second part: %q (want turns 0, 1; turn 2 is going)", got)
	}
	os.WriteFile(path, full, 0o644)
	writing.Store(false)
	// The poll the last step started may already see the whole trace and
	// the writer gone, and end Follow without waiting for another tick.
	var ferr error
	select {
	case tick <- time.Time{}:
		ferr = <-done
	case ferr = <-done:
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	Report(&want, r, ReportOptions{})
	if d := cmp.Diff(want.String(), out.String()); d != "" {
		t.Errorf("followed output is not the report (-want +got):\n%s", d)
	}
}

func TestFollowCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Follow(ctx, &bytes.Buffer{}, filepath.Join(t.TempDir(), "none.jsonl"), FollowOptions{Tick: make(chan time.Time), Writing: func(string) bool { return true }})
	if err != nil {
		t.Errorf("Follow after Ctrl-C = %v, want nil", err)
	}
}
