package claudecli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"time"
)

// Output limits: stdout is kept whole up to maxStdout (stream-json of a
// long task is large, but not unbounded); stderr only by its tail.
const (
	maxStdout  = 64 << 20
	stderrKeep = 4 << 10
	// waitDelay is how long a child gets between SIGTERM and SIGKILL, and
	// how long leftover holders of its pipes may delay the end of a run.
	waitDelay = 2 * time.Second
)

// runOutput is what one CLI process produced.
type runOutput struct {
	stdout   []byte
	stderr   []byte
	exitCode int
	// startErr is set when the process could not be started or waited
	// for (not for a non-zero exit).
	startErr error
}

// run starts the CLI with stdin, waits for it and reaps it. When ctx ends
// first the process group gets SIGTERM, then SIGKILL after waitDelay; any
// process the CLI left behind in its group is killed once it exits.
func (a *Agent) run(ctx context.Context, bin string, args, env []string, stdin string) runOutput {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Dir = a.opts.Dir
	cmd.Stdin = strings.NewReader(stdin)
	stdout := &capped{limit: maxStdout}
	stderr := &tail{keep: stderrKeep}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)
	err := cmd.Run()
	killGroup(cmd)
	out := runOutput{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.exitCode = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		// The CLI exited but something it started held its output open.
		out.exitCode = cmd.ProcessState.ExitCode()
	case cmd.ProcessState == nil:
		out.startErr = err
	default:
		out.exitCode = -1
	}
	return out
}

// capped keeps the first limit bytes written to it.
type capped struct {
	bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// tail keeps the last keep bytes written to it.
type tail struct {
	buf  []byte
	keep int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.keep:]...)
	}
	return len(p), nil
}

func (t *tail) Bytes() []byte { return t.buf }
