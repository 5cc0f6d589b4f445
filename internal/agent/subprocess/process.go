package subprocess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// exitGrace is how long a plugin whose stdout ended may take to exit on its
// own before it is killed, and how long stderr may stay open after the
// plugin exited (a grandchild can hold it) before its tail is read.
const exitGrace = 500 * time.Millisecond

// process is one running plugin: the child, its JSON-RPC connection and
// everything needed to report how it ended. All of its lifecycle lives
// here: spawn, reaping, killing, and the crash detail.
type process struct {
	pid    int
	cmd    *exec.Cmd
	conn   *jsonrpc2.Conn
	stream *stream
	stdin  *os.File
	stderr *stderrSink
	logger *slog.Logger

	exited chan struct{} // closed once the child is reaped
	state  *os.ProcessState
	wait   error

	mu       sync.Mutex
	cause    error // why the connection ended first
	killed   bool  // kitsoki killed it (protocol violation, stuck, Close)
	stopping bool  // Close is stopping it
}

// spawn starts the plugin described by decl. The caller owns the result
// and must eventually stop it.
func spawn(decl agent.Declaration, opts *options) (*process, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	cmd := exec.Command(decl.Command, decl.Args...)
	cmd.Dir = decl.Dir
	cmd.Env = environ(decl.Env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	// The child has its own copies of these ends (or failed to start).
	closeAll(stdinR, stdoutW, stderrW)
	if err != nil {
		closeAll(stdinW, stdoutR, stderrR)
		return nil, err
	}
	p := &process{
		pid:    cmd.Process.Pid,
		cmd:    cmd,
		stdin:  stdinW,
		logger: opts.logger.With("pid", cmd.Process.Pid),
		exited: make(chan struct{}),
	}
	p.stderr = newStderrSink(p.logger, opts.stderrTail, decl.Secrets)
	go p.stderr.run(stderrR)

	p.stream = newStream(plugin.NewLineStream(stdoutR, stdinW, multiCloser{stdoutR, stdinW}), p)
	p.conn = jsonrpc2.NewConn(context.Background(), p.stream,
		jsonrpc2.HandlerWithError(p.handleIncoming),
		jsonrpc2.OnSend(p.stream.onSend),
		jsonrpc2.SetLogger(slogPrinter{p.logger}))
	go p.reap()
	go p.watch()
	p.logger.Debug("plugin started", "command", decl.Command)
	return p, nil
}

// environ is kitsoki's environment plus the declared variables, which win;
// declared keys are added in sorted order so the child sees a stable env.
func environ(declared map[string]string) []string {
	env := os.Environ()
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+declared[k])
	}
	return env
}

// reap waits for the child and records how it ended.
func (p *process) reap() {
	state, err := p.cmd.Process.Wait()
	p.mu.Lock()
	p.state, p.wait = state, err
	p.mu.Unlock()
	close(p.exited)
	// Whatever the child left behind in its group goes with it.
	_ = signalGroup(p.cmd.Process, syscall.SIGKILL)
	// Output the child wrote before exiting is still read; if a
	// grandchild keeps stdout open, the connection is closed for it.
	select {
	case <-p.conn.DisconnectNotify():
	case <-time.After(exitGrace):
		p.fail(errors.New("plugin exited but its stdout stayed open"))
		p.conn.Close()
	}
}

// watch kills the child once the connection is over: right away after a
// protocol violation, after a grace period when stdout simply ended.
func (p *process) watch() {
	<-p.conn.DisconnectNotify()
	cause := p.causeErr()
	var fe *plugin.FrameError
	graceful := cause == nil || errors.Is(cause, io.EOF) || isReadError(cause)
	if errors.As(cause, &fe) {
		graceful = false
	}
	if graceful {
		select {
		case <-p.exited:
			return
		case <-time.After(exitGrace):
		}
	}
	p.kill()
}

func isReadError(err error) bool {
	var re *plugin.ReadError
	return errors.As(err, &re)
}

// kill SIGKILLs the child's process group unless it already exited.
func (p *process) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = signalGroup(p.cmd.Process, syscall.SIGKILL)
}

// fail records why the connection ended, keeping the first reason.
func (p *process) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cause == nil {
		p.cause = err
	}
}

func (p *process) causeErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cause
}

// alive reports whether the process can take another call.
func (p *process) alive() bool {
	select {
	case <-p.conn.DisconnectNotify():
		return false
	case <-p.exited:
		return false
	default:
		return true
	}
}

// handleIncoming answers nothing: a plugin may only send responses, so a
// request or notification from it ends the connection.
func (p *process) handleIncoming(_ context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	p.fail(fmt.Errorf("plugin sent a %s (method %q) but may only send responses", kindOf(req), req.Method))
	c.Close()
	p.kill()
	return nil, &jsonrpc2.Error{Code: plugin.CodeInvalidRequest, Message: "plugins may only send responses"}
}

func kindOf(req *jsonrpc2.Request) string {
	if req.Notif {
		return "notification"
	}
	return "request"
}

// stop ends the process as Close must: close stdin, SIGTERM the group,
// wait up to grace, then SIGKILL. It returns once the child is reaped.
func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	default:
		_ = signalGroup(p.cmd.Process, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
			t.Stop()
		case <-t.C:
			p.logger.Warn("plugin ignored SIGTERM; killing it", "grace", grace)
			p.kill()
			<-p.exited
		}
	}
	p.conn.Close()
	p.awaitStderr()
}

// awaitStderr waits, briefly, for stderr to reach EOF so the tail is whole.
func (p *process) awaitStderr() {
	select {
	case <-p.stderr.done:
	case <-time.After(exitGrace):
	}
}

// crashDetail waits for the child to be gone and describes the crash:
// the cause, how the process ended, and the tail of its stderr.
func (p *process) crashDetail(cause string) string {
	select {
	case <-p.exited:
	case <-time.After(exitGrace):
		p.kill()
		<-p.exited
	}
	p.awaitStderr()
	p.mu.Lock()
	state, killed, stopping := p.state, p.killed, p.stopping
	p.mu.Unlock()
	var b strings.Builder
	b.WriteString("subprocess agent: ")
	b.WriteString(cause)
	switch {
	case stopping:
		b.WriteString("; agent closed")
	case state == nil:
		b.WriteString("; plugin state unknown")
	case killed && state.ExitCode() == -1:
		b.WriteString("; plugin killed by kitsoki (" + state.String() + ")")
	default:
		b.WriteString("; plugin " + state.String())
	}
	if tail := p.stderr.Tail(); tail != "" {
		b.WriteString("; stderr tail: " + strconv.Quote(tail))
	} else {
		b.WriteString("; no stderr output")
	}
	return b.String()
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		if err := c.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// slogPrinter routes jsonrpc2's log lines (unmatched responses, protocol
// errors) to the agent's logger.
type slogPrinter struct{ l *slog.Logger }

func (s slogPrinter) Printf(format string, v ...any) {
	s.l.Warn(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
