//go:build unix

package supervise

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// guard bounds how long a test waits for something that must happen; it
// only turns a hang into a failure, no outcome depends on it.
const guard = 30 * time.Second

// within runs f and fails the test if it has not returned after guard.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatalf("%s: still waiting after %s", what, guard)
	}
}

// start starts cfg and stops the child when the test ends, whatever happens.
func start(t *testing.T, cfg Config) *Process {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		<-p.Done()
		for _, f := range []*os.File{p.Stdin(), p.Stdout(), p.Stderr()} {
			if f != nil {
				f.Close()
			}
		}
	})
	return p
}

// readLine reads one line from r, failing the test at EOF.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var line string
	var err error
	within(t, "a line from the child", func() { line, err = r.ReadString('\n') })
	if err != nil {
		t.Fatalf("reading the child's output: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// wantReaped checks pid is no child of ours any more: reaped, not a zombie.
func wantReaped(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if !errors.Is(err, syscall.ECHILD) {
		t.Errorf("wait4(%d) = %d, %v: the child was not reaped", pid, got, err)
	}
}

func TestConfigErrors(t *testing.T) {
	exe, _ := os.Executable()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no path", Config{}, "supervise: Config.Path is empty: name the program to run"},
		{"stdin twice", Config{Path: exe, Stdin: strings.NewReader(""), PipeStdin: true},
			"supervise: Config.Stdin and Config.PipeStdin are both set: use one"},
		{"stdout twice", Config{Path: exe, Stdout: io.Discard, PipeStdout: true},
			"supervise: Config.Stdout and Config.PipeStdout are both set: use one"},
		{"stderr twice", Config{Path: exe, Stderr: io.Discard, PipeStderr: true},
			"supervise: Config.Stderr and Config.PipeStderr are both set: use one"},
		{"missing program", Config{Path: "/nonexistent/program"},
			"fork/exec /nonexistent/program: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(tc.cfg)
			if err == nil {
				p.Kill()
				t.Fatal("Start succeeded")
			}
			if err.Error() != tc.want {
				t.Errorf("error (-want +got):\n%s", cmp.Diff(tc.want, err.Error()))
			}
		})
	}
}

// TestCrashIsSeenAndReaped: a child that exits on its own closes Done,
// reports its status, and leaves no zombie.
func TestCrashIsSeenAndReaped(t *testing.T) {
	var stderr testkit.SyncBuffer
	cfg := helper(t, "exit", "3")
	cfg.PipeStdin, cfg.Stderr = true, &stderr
	p := start(t, cfg)
	if _, ok := p.Exit(); ok {
		t.Fatal("Exit is ok while the child runs")
	}
	if _, err := p.Stdin().WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	within(t, "the crash", func() { <-p.Done() })
	exit, ok := p.Exit()
	if !ok || exit.Code() != 3 || exit.String() != "exit status 3" || exit.Killed {
		t.Errorf("Exit() = %+v (%s), %v; want exit status 3, not killed", exit, exit, ok)
	}
	if got := stderr.String(); got != "exiting with 3\n" {
		t.Errorf("stderr = %q: output was not drained before Done", got)
	}
	wantReaped(t, p.Pid())
	p.Kill() // after the end: no signal, no change
	if again, _ := p.Exit(); again.Killed {
		t.Error("Kill after the child was reaped marked it killed")
	}
	if got := p.Stop(context.Background()); got.String() != "exit status 3" {
		t.Errorf("Stop after the end = %s", got)
	}
}

func TestCopiedStreams(t *testing.T) {
	t.Run("separate writers", func(t *testing.T) {
		var stdout, stderr testkit.SyncBuffer
		cfg := helper(t, "echo")
		cfg.Stdin, cfg.Stdout, cfg.Stderr = strings.NewReader("a\nb\n"), &stdout, &stderr
		p := start(t, cfg)
		var exit Exit
		within(t, "the echo", func() { exit, _ = p.Wait(context.Background()) })
		if exit.Code() != 0 {
			t.Errorf("exit %s", exit)
		}
		if diff := cmp.Diff([]string{"a\nb\n", "echoed a\nechoed b\n"}, []string{stdout.String(), stderr.String()}); diff != "" {
			t.Errorf("stdout, stderr (-want +got):\n%s", diff)
		}
	})
	t.Run("one writer for both", func(t *testing.T) {
		var out testkit.SyncBuffer
		cfg := helper(t, "echo")
		cfg.Stdin, cfg.Stdout, cfg.Stderr = strings.NewReader("a\nb\n"), &out, &out
		p := start(t, cfg)
		within(t, "the echo", func() { p.Wait(context.Background()) })
		// One pipe for both keeps the order the child wrote in.
		if want := "a\nechoed a\nb\nechoed b\n"; out.String() != want {
			t.Errorf("output (-want +got):\n%s", cmp.Diff(want, out.String()))
		}
	})
}

func TestStopGraceful(t *testing.T) {
	cfg := helper(t, "term")
	cfg.PipeStdout, cfg.Grace = true, time.Hour
	p := start(t, cfg)
	readLine(t, bufio.NewReader(p.Stdout()))
	var exit Exit
	within(t, "Stop", func() { exit = p.Stop(context.Background()) })
	if exit.String() != "signal: terminated" || exit.Killed || exit.Code() != -1 {
		t.Errorf("Stop = %+v (%s), want terminated by SIGTERM", exit, exit)
	}
	wantReaped(t, p.Pid())
}

func TestStopKillsAfterGrace(t *testing.T) {
	var logs testkit.SyncBuffer
	cfg := helper(t, "ignore-term")
	cfg.PipeStdout, cfg.Grace = true, 100*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p := start(t, cfg)
	out := bufio.NewReader(p.Stdout())
	readLine(t, out)
	var exit Exit
	within(t, "Stop", func() { exit = p.Stop(context.Background()) })
	if exit.String() != "signal: killed" || !exit.Killed {
		t.Errorf("Stop = %+v (%s), want killed", exit, exit)
	}
	if got := readLine(t, out); got != "got SIGTERM" {
		t.Errorf("child said %q, want SIGTERM tried first", got)
	}
	if !strings.Contains(logs.String(), `msg="helper ignored SIGTERM; killing it" pid=`+strconv.Itoa(p.Pid())+" grace=100ms") {
		t.Errorf("log:\n%s", logs.String())
	}
	wantReaped(t, p.Pid())
}

// TestStopContextCutsTheGrace: Stop's context ending is as good as the
// grace period running out.
func TestStopContextCutsTheGrace(t *testing.T) {
	cfg := helper(t, "ignore-term")
	cfg.PipeStdout, cfg.Grace = true, time.Hour
	p := start(t, cfg)
	out := bufio.NewReader(p.Stdout())
	readLine(t, out)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan Exit)
	go func() { stopped <- p.Stop(ctx) }()
	if got := readLine(t, out); got != "got SIGTERM" {
		t.Fatalf("child said %q", got)
	}
	cancel()
	var exit Exit
	within(t, "Stop after its context ended", func() { exit = <-stopped })
	if exit.String() != "signal: killed" || !exit.Killed {
		t.Errorf("Stop = %s, want killed", exit)
	}
}

func TestWaitContextCancelStops(t *testing.T) {
	cfg := helper(t, "term")
	cfg.PipeStdout, cfg.Grace = true, time.Hour
	p := start(t, cfg)
	readLine(t, bufio.NewReader(p.Stdout()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var exit Exit
	var err error
	within(t, "Wait", func() { exit, err = p.Wait(ctx) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait error = %v, want context.Canceled", err)
	}
	if exit.String() != "signal: terminated" || exit.Killed {
		t.Errorf("Wait = %s, want stopped with SIGTERM", exit)
	}
}

// TestGrandchildrenDieWithTheGroup: a grandchild that ignores SIGTERM and
// holds the child's stdout is killed once the child is reaped, however the
// child ended; stdout then reaches EOF.
func TestGrandchildrenDieWithTheGroup(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
		stop       bool
	}{
		{"grandparent", "signal: terminated", true},
		{"grandparent-exits", "exit status 0", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := helper(t, tc.mode)
			cfg.PipeStdout, cfg.Grace = true, time.Hour
			p := start(t, cfg)
			out := bufio.NewReader(p.Stdout())
			ready := readLine(t, out)
			grandchild, err := strconv.Atoi(strings.TrimPrefix(ready, "ready "))
			if err != nil {
				t.Fatalf("child said %q", ready)
			}
			t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })
			if tc.stop {
				p.Stop(context.Background())
			}
			within(t, "the child's end", func() { <-p.Done() })
			if exit, _ := p.Exit(); exit.String() != tc.want {
				t.Errorf("child ended with %s, want %s", exit, tc.want)
			}
			var rest []byte
			within(t, "EOF on stdout, held by the grandchild", func() { rest, err = io.ReadAll(out) })
			if err != nil || len(rest) != 0 {
				t.Errorf("rest of stdout %q, %v", rest, err)
			}
		})
	}
}

// TestOutputHeldOutsideTheGroupIsCut: a process that left the group keeps
// copied output open; Done still closes, after the grace period.
func TestOutputHeldOutsideTheGroupIsCut(t *testing.T) {
	var logs, out testkit.SyncBuffer
	cfg := helper(t, "grandparent-exits", "escape")
	cfg.Stdout, cfg.Grace = &out, 100*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p := start(t, cfg)
	within(t, "Done", func() { <-p.Done() })
	grandchild, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out.String(), "ready ")))
	if err != nil {
		t.Fatalf("output %q", out.String())
	}
	syscall.Kill(grandchild, syscall.SIGKILL)
	if exit, _ := p.Exit(); exit.String() != "exit status 0" {
		t.Errorf("exit %s", exit)
	}
	if !strings.Contains(logs.String(), `msg="helper exited but its output stayed open; closing it"`) {
		t.Errorf("log:\n%s", logs.String())
	}
}
