//go:build linux

package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	runtimepkg "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// A real run: host.run as a background job. One job's output is bound
// when its completion is delivered; a job still running when the run
// closes is cancelled and its whole process group reaped.
func TestBackgroundHostRunRealProcesses(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	body := `app: {id: bg-real}
hosts: [host.run]
world:
  out: {type: string, default: ""}
intents:
  go: {}
  slow: {}
root: start
states:
  start:
    on:
      go: [{target: quick}]
      slow: [{target: slow}]
  quick:
    on_enter:
      - invoke: host.run
        with: {cmd: "echo", args: ["hello; rm -rf /"]}
        background: true
        bind: {out: stdout}
        on_complete:
          - target: start
  slow:
    on_enter:
      - invoke: host.run
        with: {cmd: "sleep 600 & echo $! > child.pid; wait"}
        background: true
`
	if err := os.WriteFile(app, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: "bg"}})
	if err != nil {
		t.Fatal(err)
	}
	sess := rt.Session()
	ctx := context.Background()
	if _, err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Turn(ctx, "go", nil, ""); err != nil {
		t.Fatal(err)
	}
	outs, err := sess.Settle(ctx)
	if err != nil || len(outs) != 1 {
		t.Fatalf("settle: %d outcomes, %v", len(outs), err)
	}
	if got := sess.World()["out"]; got != "hello; rm -rf /\n" || sess.State() != "start" {
		t.Fatalf("out %q, state %s", got, sess.State())
	}
	if _, err := sess.Turn(ctx, "slow", nil, ""); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "child.pid")
	var pid int
	for pid == 0 { // the shell writes its child's pid once it has started it
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		runtimepkg.Gosched()
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// SIGKILL went to the job's process group when the run closed; the
	// child dies as soon as it is scheduled (a zombie until init reaps it).
	// A child that was never signalled keeps this loop going until the
	// test binary's -timeout fails the test.
	for alive(pid) {
		runtimepkg.Gosched()
	}
	if got := sess.Jobs().List()[1].Status; got != jobs.Cancelled {
		t.Errorf("slow job: %s, want cancelled", got)
	}
}

// alive reports whether pid runs: it exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}
