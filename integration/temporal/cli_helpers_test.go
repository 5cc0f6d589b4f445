package temporal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kitsokiBin builds the kitsoki binary once per test binary, into a
// directory removed when the tests end (TestMain's run removes it).
var kitsokiBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kitsoki-bin-")
	if err != nil {
		return "", err
	}
	binDirs.Store(dir, true)
	bin := filepath.Join(dir, "kitsoki")
	// Built in the main module (the repository root), with its own go.sum:
	// this module does not require what only the CLI imports.
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kitsoki")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", errors.New("go build ./cmd/kitsoki (in the repository root): " + err.Error() + ": " + string(out))
	}
	return bin, nil
})

// binDirs remembers the build directory so TestMain can remove it.
var binDirs sync.Map

func removeBinDirs() {
	binDirs.Range(func(k, _ any) bool {
		os.RemoveAll(k.(string))
		return true
	})
}

func kitsoki(t *testing.T) string {
	t.Helper()
	bin, err := kitsokiBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// workerProc is a `kitsoki worker` child process.
type workerProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

// syncBuffer is a bytes.Buffer safe for the child's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorker starts `kitsoki worker --temporal <dev server> args...` in
// dir and waits until it polls; the test's cleanup stops it with SIGTERM
// (SIGKILL after 10 s) and reaps it.
func startWorker(t *testing.T, dir string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(kitsoki(t), append([]string{"worker", "--temporal", server.Addr}, args...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &workerProc{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	for range 300 {
		if strings.Contains(p.out.String(), "worker polling") {
			return p
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("kitsoki worker exited (%v):\n%s", err, p.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("kitsoki worker did not start polling in 30 s:\n%s", p.out.String())
	return nil
}

// stop sends SIGTERM and waits for the graceful stop, then reaps.
func (p *workerProc) stop(t *testing.T) {
	select {
	case err := <-p.exited:
		p.exited <- err
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err := <-p.exited
		p.exited <- err
		t.Errorf("kitsoki worker did not stop on SIGTERM in 10 s:\n%s", p.out.String())
	}
}

// kitsokiRun runs the kitsoki binary in dir and returns its stdout,
// stderr and exit code.
func kitsokiRun(t *testing.T, ctx context.Context, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, kitsoki(t), args...)
	cmd.Dir = dir
	// A local run's session index goes to the test's own directory, never
	// into the repository's stories.
	cmd.Env = append(os.Environ(), "KITSOKI_SESSIONS_DIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kitsoki %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}
