// Package clirun is what the agent CLI transports (builtin.codex_cli,
// builtin.copilot_cli) share: finding the CLI with a message that says
// how to install it, the loopback MCP server their calls' tool sessions
// open on, the child's environment, one supervised run of the CLI (its
// own process group, reaped, its output bounded) and private temporary
// files. It also holds the parts of a call that do not depend on the CLI
// (call.go): the call's deadline, its failures before and after the run,
// the key of a converse call's conversation, and the answer built from
// the tool session. It is not a transport.
package clirun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/supervise"
)

// Output limits: stdout is kept whole up to MaxStdout, stderr by its
// tail.
const (
	MaxStdout  = 64 << 20
	stderrKeep = 4 << 10
	// Grace is how long a child gets between SIGTERM and SIGKILL.
	Grace = 2 * time.Second
)

// CLI names one agent CLI in messages.
type CLI struct {
	// Name is what messages call it ("codex CLI").
	Name string
	// Command is the binary looked up on PATH when none is declared.
	Command string
	// Install says how to install it.
	Install string
}

// LookPath resolves the CLI's binary: command, or the CLI's default name,
// a path or a name on PATH. A CLI not found is one line that says how to
// install it or point at it.
func (c CLI) LookPath(command, where string) (string, error) {
	name := command
	if name == "" {
		name = c.Command
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", agent.Errorf(agent.KindTransportError, "%s %q not found (%v): %s so that %s is on PATH, or set command: <path to %s> under %s",
			c.Name, name, err, c.Install, c.Command, c.Command, where)
	}
	return path, nil
}

// Server is the loopback MCP server a transport's calls open their tool
// sessions on, started at the first call and closed with the transport.
type Server struct {
	Logger *slog.Logger

	mu     sync.Mutex
	srv    *toolserver.HTTPServer
	closed bool
}

// Open opens a session on the server, starting it first if needed.
func (s *Server) Open(cfg toolserver.SessionConfig) (*toolserver.Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the agent is closed")
	}
	if s.srv == nil {
		srv, err := toolserver.ListenHTTP("", s.Logger)
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("start kitsoki's MCP server: %w", err)
		}
		s.srv = srv
	}
	srv := s.srv
	s.mu.Unlock()
	return srv.Open(cfg)
}

// Close stops the server; later Opens fail.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.srv != nil {
		return s.srv.Close()
	}
	return nil
}

// Lookup reads a variable of the child's environment: the
// declaration's env: first, then base (the process environment when
// nil), as Environ builds it.
func Lookup(name string, declEnv map[string]string, base []string) (string, bool) {
	if v, ok := declEnv[name]; ok {
		return v, true
	}
	if base == nil {
		return os.LookupEnv(name)
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Environ is the child's environment: base (os.Environ() when nil) with
// kitsoki's binary directory first on PATH, then each map of extra in
// order (a later one wins), sorted.
func Environ(base []string, extra ...map[string]string) []string {
	if base == nil {
		base = os.Environ()
	}
	env := map[string]string{}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if p := env["PATH"]; p != "" {
			env["PATH"] = dir + string(os.PathListSeparator) + p
		} else {
			env["PATH"] = dir
		}
	}
	for _, m := range extra {
		for k, v := range m {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Run is one run of a CLI.
type Run struct {
	Name   string // for logs: "codex CLI"
	Path   string
	Args   []string
	Dir    string
	Env    []string
	Stdin  string
	Logger *slog.Logger
	// OnLine, when set, sees each line of stdout as it comes; returning
	// true stops the run (its process group is terminated) and marks the
	// output Stopped.
	OnLine func(line []byte) (stop bool)
}

// Output is what one run produced.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	// StartErr is set when the process could not be started or waited
	// for (not for a non-zero exit).
	StartErr error
	// Stopped says OnLine stopped the run.
	Stopped bool
}

// Exec starts the CLI, waits for it and reaps it (internal/base/supervise:
// its own process group, and on Linux death with kitsoki). When ctx ends
// first the group gets SIGTERM, then SIGKILL after Grace.
func Exec(ctx context.Context, r Run) Output {
	if err := ctx.Err(); err != nil {
		return Output{StartErr: err}
	}
	stdout := &capped{limit: MaxStdout}
	stderr := &tail{keep: stderrKeep}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var w interface{ Write([]byte) (int, error) } = stdout
	lines := &lineWatch{w: stdout, on: r.OnLine, stop: stop}
	if r.OnLine != nil {
		w = lines
	}
	p, err := supervise.Start(supervise.Config{
		Name: r.Name, Path: r.Path, Args: r.Args, Dir: r.Dir, Env: r.Env,
		Stdin: strings.NewReader(r.Stdin), Stdout: w, Stderr: stderr,
		Grace: Grace, Logger: r.Logger,
	})
	if err != nil {
		return Output{StartErr: err}
	}
	exit, _ := p.Wait(wctx)
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.buf, ExitCode: exit.Code(), Stopped: lines.stopped.Load()}
	if exit.State == nil {
		out.StartErr = exit.Err
	}
	return out
}

// StderrTail is the last agent.QuoteLimit bytes of stderr, trimmed.
func (o Output) StderrTail() string {
	s := strings.TrimSpace(string(o.Stderr))
	if len(s) > agent.QuoteLimit {
		return "..." + s[len(s)-agent.QuoteLimit:]
	}
	return s
}

// WriteTemp writes b to a new file private to the user and returns its
// path; the caller removes it.
func WriteTemp(pattern string, b []byte) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// capped keeps the first limit bytes written to it.
type capped struct {
	bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// lineWatch passes what it is written to w, and each whole line to on;
// on asking to stop cancels the run.
type lineWatch struct {
	w       *capped
	on      func([]byte) bool
	stop    context.CancelFunc
	part    []byte
	stopped atomic.Bool
}

func (l *lineWatch) Write(p []byte) (int, error) {
	l.w.Write(p)
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		line := l.part[:i]
		l.part = l.part[i+1:]
		if !l.stopped.Load() && l.on(line) {
			l.stopped.Store(true)
			l.stop()
		}
	}
	if len(l.part) > MaxStdout {
		l.part = nil
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
