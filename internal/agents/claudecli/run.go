package claudecli

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
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
	// ends is when each complete stdout line arrived.
	ends []time.Time
}

// run starts the CLI with stdin, waits for it and reaps it (through
// internal/base/supervise: its own process group, and on Linux death with
// kitsoki). When ctx ends first the process group gets SIGTERM, then
// SIGKILL after waitDelay; any process the CLI left behind in its group is
// killed once it exits, and output still held open by something outside
// the group is cut off waitDelay after the exit.
func (a *Agent) run(ctx context.Context, bin, dir string, args, env []string, stdin string) runOutput {
	if err := ctx.Err(); err != nil {
		return runOutput{startErr: err}
	}
	stdout := &stamped{capped: capped{limit: maxStdout}, clk: a.opts.Clock}
	stderr := &tail{keep: stderrKeep}
	p, err := supervise.Start(supervise.Config{
		Name: "claude CLI", Path: bin, Args: args, Dir: dir, Env: env,
		Stdin: strings.NewReader(stdin), Stdout: stdout, Stderr: stderr,
		Grace: waitDelay, Logger: a.opts.Logger,
	})
	if err != nil {
		return runOutput{startErr: err}
	}
	exit, _ := p.Wait(ctx) // a ctx that ended is the caller's to report
	// Wait returns after the copying ended, so the buffers are whole and
	// no longer written.
	out := runOutput{stdout: stdout.Bytes(), stderr: stderr.Bytes(), exitCode: exit.Code(), ends: stdout.stamps()}
	if exit.State == nil {
		out.startErr = exit.Err // waiting for it failed
	}
	return out
}

// capped keeps the first limit bytes written to it. The buffer is a named
// field, not embedded: an embedded bytes.Buffer's ReadFrom would let
// io.Copy (os/exec copies a child's output with it) write past the limit.
type capped struct {
	buf   bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// Bytes is what was kept.
func (c *capped) Bytes() []byte { return c.buf.Bytes() }

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
