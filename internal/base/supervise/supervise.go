// Package supervise owns the whole life of a child process: every transport
// that starts one (subprocess plugins, the claude CLI, llama-server) goes
// through it, so they share one answer to process groups, parent death,
// stopping, reaping and output draining.
//
// A Process is started from an OS thread of its own, locked for the child's
// life and ended once the child is reaped. On Linux the child gets a
// parent-death signal (SIGKILL), which the kernel sends when the *thread*
// that forked it exits; Go retires threads at will, so a child started from
// an ordinary goroutine could be killed at any moment. The reaper goroutine
// that waits for the child is that thread's goroutine.
//
// On unix the child leads a process group of its own: signals reach
// everything it started, a terminal's Ctrl-C reaches kitsoki only, and once
// the child is reaped whatever it left in its group is killed. On Linux
// kitsoki is also a child subreaper (prctl PR_SET_CHILD_SUBREAPER), and
// every child's environment carries a token of its Process
// (KITSOKI_SUPERVISED): a descendant that left the group and its session
// (setsid, a double fork) is re-parented to kitsoki when orphaned, and is
// killed and reaped with the child.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is Config.Grace when it is zero.
const DefaultGrace = 2 * time.Second

// Config says what to run and how. It is read once, by Start.
//
// Each standard stream is one of: nothing (the null device); an *os.File,
// handed to the child as it is; another io.Reader or io.Writer, fed or
// filled through a pipe by a goroutine of the Process; or, with the Pipe
// flag, a pipe whose kitsoki end the caller takes from Process.Stdin,
// Stdout or Stderr. A stream may not have both a value and its Pipe flag.
type Config struct {
	// Name says what the child is in log lines: "plugin", "llama-server".
	Name string
	// Path is the program; a name without a slash is looked up in PATH.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Dir is the working directory; empty means kitsoki's.
	Dir string
	// Env is the child's whole environment; nil means kitsoki's own.
	Env []string

	Stdin  io.Reader
	Stdout io.Writer
	// Stderr may be the same writer as Stdout: both streams then share
	// one pipe, so their interleaving is kept.
	Stderr io.Writer

	PipeStdin, PipeStdout, PipeStderr bool

	// Grace is how long Stop waits after SIGTERM before SIGKILL, and how
	// long output copied to Stdout/Stderr may keep flowing after the child
	// was reaped (a process that left the group can hold the pipe) before
	// the pipe is closed. Zero means DefaultGrace.
	Grace time.Duration
	// Logger receives the supervisor's warnings (a child killed after
	// ignoring SIGTERM, output cut off); nil means slog.Default().
	Logger *slog.Logger
}

// Exit is how a child ended.
type Exit struct {
	// State is what the OS reported; nil only when waiting failed (Err).
	State *os.ProcessState
	Err   error
	// Killed says kitsoki sent the child SIGKILL (Kill, or Stop after the
	// grace period or its context ended) before it exited.
	Killed bool
}

// Code is the exit status, or -1 when the child was ended by a signal or
// its end is unknown.
func (e Exit) Code() int {
	if e.State == nil {
		return -1
	}
	return e.State.ExitCode()
}

// String words the end as os/exec does: "exit status 3", "signal: killed".
func (e Exit) String() string {
	switch {
	case e.State != nil:
		return e.State.String()
	case e.Err != nil:
		return "wait: " + e.Err.Error()
	}
	return "not ended"
}

// Process is one started child. Its methods are safe for concurrent use.
type Process struct {
	name   string
	grace  time.Duration
	logger *slog.Logger
	proc   *os.Process
	pid    int
	token  string // marks the child's descendants (Linux: sweep)

	stdin          *os.File // kitsoki's pipe ends (Pipe flags), the caller's
	stdout, stderr *os.File

	copies   sync.WaitGroup // copy-mode streams still flowing
	copyEnds []*os.File     // kitsoki's ends of copy-mode pipes

	done chan struct{} // closed once reaped and copy-mode output drained

	mu     sync.Mutex
	exited bool // reaped: the pid is no longer ours to signal
	killed bool
	exit   Exit
}

// Start starts the child described by cfg. The caller owns the result: it
// must see it end (Done), by itself or through Stop, Kill or Wait's context,
// and close the pipe ends it took.
func Start(cfg Config) (*Process, error) {
	if cfg.Path == "" {
		return nil, errors.New("supervise: Config.Path is empty: name the program to run")
	}
	switch {
	case cfg.PipeStdin && cfg.Stdin != nil:
		return nil, errors.New("supervise: Config.Stdin and Config.PipeStdin are both set: use one")
	case cfg.PipeStdout && cfg.Stdout != nil:
		return nil, errors.New("supervise: Config.Stdout and Config.PipeStdout are both set: use one")
	case cfg.PipeStderr && cfg.Stderr != nil:
		return nil, errors.New("supervise: Config.Stderr and Config.PipeStderr are both set: use one")
	}
	p := &Process{name: cfg.Name, grace: cfg.Grace, logger: cfg.Logger, done: make(chan struct{})}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	if p.name == "" {
		p.name = "child process"
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	cmd.SysProcAttr = sysProcAttr()
	p.token = prepare(cmd)

	var s streams
	var err error
	if cmd.Stdin, p.stdin, err = s.input(cfg.Stdin, cfg.PipeStdin); err == nil {
		if cmd.Stdout, p.stdout, err = s.output(cfg.Stdout, cfg.PipeStdout); err == nil {
			if sameWriter(cfg.Stdout, cfg.Stderr) {
				cmd.Stderr = cmd.Stdout
			} else {
				cmd.Stderr, p.stderr, err = s.output(cfg.Stderr, cfg.PipeStderr)
			}
		}
	}
	if err != nil {
		closeFiles(s.child)
		closeFiles(s.parent)
		return nil, fmt.Errorf("supervise: make pipes for %s: %w", p.name, err)
	}

	p.copyEnds = s.copyEnds
	p.copies.Add(len(s.copies))
	started := make(chan error)
	go p.run(cmd, started)
	err = <-started
	closeFiles(s.child) // the child has its own copies now, or never will
	if err != nil {
		closeFiles(s.parent)
		return nil, err
	}
	for _, flow := range s.copies {
		go func() {
			defer p.copies.Done()
			flow()
		}()
	}
	return p, nil
}

// run starts the child and reaps it, on an OS thread locked for as long as
// the child lives (see the package comment).
func (p *Process) run(cmd *exec.Cmd, started chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	if err := cmd.Start(); err != nil {
		started <- err
		return
	}
	p.proc, p.pid = cmd.Process, cmd.Process.Pid
	started <- nil
	state, err := cmd.Process.Wait()
	p.mu.Lock()
	p.exited = true
	p.exit = Exit{State: state, Err: err, Killed: p.killed}
	p.mu.Unlock()
	// Whatever the child left behind in its group goes with it, and on
	// Linux so does what left the group (a setsid, a double fork), which
	// kitsoki, a child subreaper, has adopted.
	_ = p.signalGroup(syscall.SIGKILL)
	p.sweep()
	p.drain()
	close(p.done)
}

// drain waits for copy-mode streams to finish, closing their pipes after
// the grace period if something outside the group still holds them.
func (p *Process) drain() {
	flowing := make(chan struct{})
	go func() {
		p.copies.Wait()
		close(flowing)
	}()
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-flowing:
	case <-t.C:
		p.logger.Warn(p.name+" exited but its output stayed open; closing it", "pid", p.pid, "grace", p.grace)
		closeFiles(p.copyEnds)
		<-flowing
	}
	closeFiles(p.copyEnds)
}

// Pid is the child's process id (and, on unix, its process group's).
func (p *Process) Pid() int { return p.pid }

// Stdin is kitsoki's end of the child's stdin with PipeStdin, else nil.
// Closing it is the caller's business.
func (p *Process) Stdin() *os.File { return p.stdin }

// Stdout is kitsoki's end of the child's stdout with PipeStdout, else nil.
func (p *Process) Stdout() *os.File { return p.stdout }

// Stderr is kitsoki's end of the child's stderr with PipeStderr, else nil.
func (p *Process) Stderr() *os.File { return p.stderr }

// Done is closed once the child has been reaped and output copied to
// Config.Stdout/Stderr has been drained. A Done the caller did not cause
// with Stop, Kill or Wait's context is a crash.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns how the child ended; ok is false while it runs.
func (p *Process) Exit() (exit Exit, ok bool) {
	select {
	case <-p.done:
	default:
		return Exit{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit, true
}

// Wait waits for the child to end. If ctx ends first, the child is
// stopped as Stop does, and the error is ctx's.
func (p *Process) Wait(ctx context.Context) (Exit, error) {
	select {
	case <-p.done:
		exit, _ := p.Exit()
		return exit, nil
	case <-ctx.Done():
		return p.Stop(context.WithoutCancel(ctx)), ctx.Err()
	}
}

// Stop ends the child: SIGTERM to its group, then SIGKILL to the group
// once the grace period passes or ctx ends, whichever is first. It returns
// once the child is reaped; stopping a child that already ended just
// returns its Exit.
func (p *Process) Stop(ctx context.Context) Exit {
	if p.signal(syscall.SIGTERM) {
		t := time.NewTimer(p.grace)
		select {
		case <-p.done:
		case <-t.C:
			p.logger.Warn(p.name+" ignored SIGTERM; killing it", "pid", p.pid, "grace", p.grace)
			p.Kill()
		case <-ctx.Done():
			p.Kill()
		}
		t.Stop()
	}
	<-p.done
	exit, _ := p.Exit()
	return exit
}

// Kill sends SIGKILL to the child's group now, unless it was reaped; it
// does not wait (Done says when the child is gone).
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	p.killed = true
	_ = p.signalGroup(syscall.SIGKILL)
}

// signal sends sig to the child's group unless the child was reaped, and
// reports whether it was sent.
func (p *Process) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return false
	}
	if err := p.signalGroup(sig); err != nil {
		if errors.Is(err, errNoSIGTERM) {
			p.killed = true
			return true
		}
		p.logger.Warn("signal "+p.name, "pid", p.pid, "signal", sig.String(), "err", err)
	}
	return true
}

// streams collects what Start sets up for the three standard streams.
type streams struct {
	child    []*os.File // ends handed to the child, closed after Start
	parent   []*os.File // kitsoki's ends, closed if Start fails
	copyEnds []*os.File // kitsoki's ends of copy-mode pipes
	copies   []func()   // the copy loops, started after Start
}

// input sets up stdin: the value for exec.Cmd and, with pipe, kitsoki's end.
func (s *streams) input(r io.Reader, pipe bool) (io.Reader, *os.File, error) {
	if f, ok := r.(*os.File); ok && !pipe {
		return f, nil, nil
	}
	if r == nil && !pipe {
		return nil, nil, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	s.child = append(s.child, pr)
	s.parent = append(s.parent, pw)
	if pipe {
		return pr, pw, nil
	}
	s.copyEnds = append(s.copyEnds, pw)
	s.copies = append(s.copies, func() {
		// A child that exits without reading all of it breaks the pipe;
		// that is its business, not an error of kitsoki's.
		_, _ = io.Copy(pw, r)
		_ = pw.Close()
	})
	return pr, nil, nil
}

// output sets up stdout or stderr as input does stdin.
func (s *streams) output(w io.Writer, pipe bool) (io.Writer, *os.File, error) {
	if f, ok := w.(*os.File); ok && !pipe {
		return f, nil, nil
	}
	if w == nil && !pipe {
		return nil, nil, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	s.child = append(s.child, pw)
	s.parent = append(s.parent, pr)
	if pipe {
		return pw, pr, nil
	}
	s.copyEnds = append(s.copyEnds, pr)
	s.copies = append(s.copies, func() { _, _ = io.Copy(w, pr) })
	return pw, nil, nil
}

// sameWriter reports whether a and b are the same non-nil writer; writers
// of uncomparable types are never the same.
func sameWriter(a, b io.Writer) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
