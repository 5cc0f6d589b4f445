// Package cmdrun runs the command-line tools handlers drive (git, gh, an
// editor) through the process supervisor: argv only, no shell, its own
// process group, stopped when the call's context ends, output capped. It is
// the one place a handler starts such a tool, so every one is reaped the
// same way and fails with the same kinds of error.
package cmdrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// DefaultMaxOutput is how much of a tool's stdout a run keeps: 1 MiB.
const DefaultMaxOutput = 1 << 20

// maxStderr is how much of a tool's stderr a run keeps for its error.
const maxStderr = 64 << 10

// Tool is one program and how to run it. The zero value of every field but
// Program works.
type Tool struct {
	// Program is the executable; a name without a slash is looked up in
	// PATH.
	Program string
	// Env is added over kitsoki's environment (KEY=VALUE entries).
	Env []string
	// Environ is the base environment; nil is os.Environ.
	Environ func() []string
	// Logger receives the supervisor's warnings; nil discards them.
	Logger *slog.Logger
	// MaxOutput caps the stdout a run keeps; 0 is DefaultMaxOutput.
	MaxOutput int
	// Missing is appended to the error of a program not found in PATH: what
	// to do about it ("install git, or remove the call").
	Missing string
	// Root, when set, is the workspace every directory the tool runs in
	// lies inside: the directory is opened through it
	// (workspace.Root.CommandDir), so one swapped for a symlink leading
	// out is refused rather than entered.
	Root workspace.Root
}

// Output is what a run wrote.
type Output struct {
	Stdout    string
	Stderr    string
	Truncated bool // stdout went past MaxOutput
}

// ExitError is a tool that ran and exited non-zero.
type ExitError struct {
	Program string
	Args    []string
	Code    int
	Output
}

// Message is what the tool said about its failure: stderr, else stdout,
// else the exit status.
func (e *ExitError) Message() string {
	if m := strings.TrimSpace(e.Stderr); m != "" {
		return m
	}
	if m := strings.TrimSpace(e.Stdout); m != "" {
		return m
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Program, strings.Join(e.Args, " "), e.Message())
}

// NotFoundError is a program that is not installed.
type NotFoundError struct {
	Program string
	Fix     string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("%s is not installed (not found in $PATH)", e.Program)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// IsNotFound reports whether err is a program that is not installed.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// Run runs the tool with args in dir and waits for it. A non-zero exit is
// an *ExitError carrying what it wrote; a program missing from PATH is a
// *NotFoundError; a context that ended stops the process group and is an
// error naming the tool.
func (t Tool) Run(ctx context.Context, dir string, args ...string) (Output, error) {
	return t.RunInput(ctx, dir, nil, args...)
}

// RunInput is Run with stdin read from in (nil: no input).
func (t Tool) RunInput(ctx context.Context, dir string, in io.Reader, args ...string) (Output, error) {
	maxOut := t.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	logger := t.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	out, errb := &capped{max: maxOut}, &capped{max: maxStderr}
	at, release := dir, func() {}
	if dir != "" {
		var err error
		if at, release, err = t.Root.CommandDir(dir); err != nil {
			return Output{}, fmt.Errorf("%s: working directory %s: %w", t.Program, dir, err)
		}
	}
	p, err := supervise.Start(supervise.Config{
		Name: t.Program, Path: t.Program, Args: args, Dir: at, Env: t.environ(),
		Stdin: in, Stdout: out, Stderr: errb, Logger: logger,
	})
	release() // the child changed into the directory before it started
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return Output{}, &NotFoundError{Program: t.Program, Fix: t.Missing}
		}
		return Output{}, fmt.Errorf("start %s: %w", t.Program, err)
	}
	exit, err := p.Wait(ctx)
	res := Output{Stdout: out.buf.String(), Stderr: errb.buf.String(), Truncated: out.cut}
	if err != nil {
		return res, fmt.Errorf("%s %s stopped (%s): %w", t.Program, strings.Join(args, " "), exit, err)
	}
	if code := exit.Code(); code != 0 {
		return res, &ExitError{Program: t.Program, Args: args, Code: code, Output: res}
	}
	return res, nil
}

// environ is the base environment with Env over it.
func (t Tool) environ() []string {
	base := os.Environ
	if t.Environ != nil {
		base = t.Environ
	}
	if len(t.Env) == 0 {
		return base()
	}
	over := map[string]bool{}
	for _, kv := range t.Env {
		k, _, _ := strings.Cut(kv, "=")
		over[k] = true
	}
	var env []string
	for _, kv := range base() {
		if k, _, _ := strings.Cut(kv, "="); !over[k] {
			env = append(env, kv)
		}
	}
	return append(env, t.Env...)
}

// capped keeps the first max bytes written and drops the rest.
type capped struct {
	max int
	buf bytes.Buffer
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	switch {
	case room >= len(p):
		c.buf.Write(p)
	case room > 0:
		c.buf.Write(p[:room])
		c.cut = true
	default:
		c.cut = true
	}
	return len(p), nil
}

// NoOption refuses a value program would read as an option (a branch,
// remote or commit starting with '-').
func NoOption(program, key, v string) error {
	if strings.HasPrefix(v, "-") {
		return fmt.Errorf("with.%s %q starts with '-': %s would read it as an option; name a branch, commit or path", key, v, program)
	}
	return nil
}
