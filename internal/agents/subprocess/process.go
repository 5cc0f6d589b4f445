package subprocess

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/supervise"
	"github.com/kitsoki/kitsoki/plugin"
)

// exitGrace is how long a plugin whose stdout ended may take to exit on its
// own before it is killed, and how long stderr may stay open after the
// plugin exited (a grandchild can hold it) before its tail is read.
const exitGrace = 500 * time.Millisecond

// process is one running plugin: the supervised child, its JSON-RPC
// connection and everything needed to report how it ended. The child's
// life (group, parent-death signal, stop, reaping) is the supervisor's;
// what a plugin's connection means for it is decided here.
type process struct {
	pid    int
	sup    *supervise.Process
	conn   *conn
	stdin  *os.File
	stderr *stderrSink
	logger *slog.Logger

	exited chan struct{} // closed once the child is reaped
	state  *os.ProcessState

	mu       sync.Mutex
	cause    error // why the connection ended first
	killed   bool  // kitsoki SIGKILLed it (protocol violation, stuck, Close)
	stopping bool  // Close is stopping it
}

// spawn starts the plugin described by decl. The caller owns the result
// and must eventually stop it.
func spawn(decl agent.Declaration, opts *options) (*process, error) {
	sup, err := supervise.Start(supervise.Config{
		Name: "plugin", Path: decl.Command, Args: decl.Args, Dir: decl.Dir, Env: environ(decl.Env),
		PipeStdin: true, PipeStdout: true, PipeStderr: true,
		Grace: opts.grace, Logger: opts.logger,
	})
	if err != nil {
		return nil, err
	}
	p := &process{
		pid:    sup.Pid(),
		sup:    sup,
		stdin:  sup.Stdin(),
		logger: opts.logger.With("pid", sup.Pid()),
		exited: make(chan struct{}),
	}
	p.stderr = newStderrSink(p.logger, opts.stderrTail, decl.Secrets)
	go p.stderr.run(sup.Stderr())

	stdout := sup.Stdout()
	ls := plugin.NewLineStream(stdout, p.stdin, multiCloser{stdout, p.stdin})
	p.conn = newConn(ls, stdout, p.logger, p.connFailed)
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

// reap records how the child ended once the supervisor reaped it (and
// killed what it left in its group).
func (p *process) reap() {
	<-p.sup.Done()
	exit, _ := p.sup.Exit()
	p.mu.Lock()
	p.state = exit.State
	p.killed = exit.Killed
	p.mu.Unlock()
	close(p.exited)
	// Output the child wrote before exiting is still read; if a
	// grandchild keeps stdout open, the connection is closed for it.
	select {
	case <-p.conn.done:
	case <-time.After(exitGrace):
		p.fail(errors.New("plugin exited but its stdout stayed open"))
		p.conn.close()
	}
}

// connFailed records why the connection ended and, after a protocol
// violation, kills the child at once: before the connection closes the
// child's stdin, so a plugin that would exit on EOF cannot end on its own
// first and the crash reads the same every time.
func (p *process) connFailed(err error) {
	p.fail(err)
	if violation(err) {
		p.kill()
	}
}

// violation reports whether err ends a connection because the plugin broke
// the protocol (as opposed to stdout ending or failing to read).
func violation(err error) bool {
	var fe *plugin.FrameError
	if errors.As(err, &fe) {
		return true
	}
	return !(err == nil || errors.Is(err, io.EOF) || isReadError(err))
}

// watch kills the child once the connection is over: right away after a
// protocol violation, after a grace period when stdout simply ended.
func (p *process) watch() {
	<-p.conn.done
	if !violation(p.causeErr()) {
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
	p.sup.Kill()
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
	case <-p.conn.done:
		return false
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop ends the process as Close must: close stdin, then the supervisor's
// stop (SIGTERM to the group, the grace period, SIGKILL). It returns once
// the child is reaped.
func (p *process) stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.stdin.Close()
	p.sup.Stop(context.Background())
	<-p.exited
	p.conn.close()
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
