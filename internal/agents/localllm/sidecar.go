package localllm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
)

// Sidecar timings; a sidecarConfig may override them (tests do).
const (
	defaultHealthTimeout = 5 * time.Minute // a cold CPU load of a 1 GB GGUF can take a while
	defaultStopGrace     = 5 * time.Second
	healthPollMin        = 25 * time.Millisecond
	healthPollMax        = 500 * time.Millisecond
	lockPoll             = 50 * time.Millisecond
	stderrTail           = 4096
)

// sidecarConfig says what to run. Two agents whose configs have the same key
// share one process.
type sidecarConfig struct {
	opts          Options
	serverBin     string // "" → the pinned release, fetched
	model         string // model id, fetched from the pins
	port          int    // 0 → a free port
	parallel      int
	extraArgs     []string
	healthTimeout time.Duration
	stopGrace     time.Duration
	logger        *slog.Logger
}

func (c sidecarConfig) key() string {
	return strings.Join([]string{c.opts.CacheDir, c.serverBin, c.model, strconv.Itoa(c.port), strconv.Itoa(c.parallel), strings.Join(c.extraArgs, " ")}, "\x00")
}

// Pool is a set of llama-server sidecars. A sidecar is shared by every
// agent and embedder of the pool whose configuration matches and lives
// while at least one of them is open: the last one's Close stops it.
//
// There is no process-wide pool: runtime.Open gives each run a pool of
// its own (closed with the run), and a caller running several runs at once
// (mcp serve, a Temporal worker, an eval's candidates) passes them one it
// owns, so they share one server per model as before. The zero value is
// not usable; use NewPool.
type Pool struct {
	mu       sync.Mutex
	sidecars map[string]*sidecar
	closed   bool
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{sidecars: map[string]*sidecar{}} }

// sidecarHold is a managed-mode user's hold on a pooled sidecar (an
// agent's or an embedder's): the sidecar, once acquired, and whether the
// user is closed.
type sidecarHold struct {
	mu      sync.Mutex
	sidecar *sidecar
	closed  bool
}

// close ends the hold once: client's idle connections are dropped and the
// sidecar, if one was acquired, goes back to pool, which stops it when
// this was its last holder. Later calls do nothing.
func (h *sidecarHold) close(client *http.Client, pool *Pool) error {
	h.mu.Lock()
	s, already := h.sidecar, h.closed
	h.closed = true
	h.mu.Unlock()
	if already {
		return nil
	}
	client.CloseIdleConnections()
	if s == nil {
		return nil
	}
	return pool.release(s)
}

// errPoolClosed is what asking a sidecar of a closed pool answers.
var errPoolClosed = errors.New("its local model servers were stopped: the run that owned them has ended")

// acquire returns the sidecar for cfg, creating it (not starting it), and
// counts one more user. A closed pool hands out a sidecar that never
// starts (errPoolClosed).
func (p *Pool) acquire(cfg sidecarConfig) *sidecar {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return &sidecar{cfg: cfg, sem: make(chan struct{}, 1), users: 1, closed: true}
	}
	k := cfg.key()
	s, ok := p.sidecars[k]
	if !ok {
		s = &sidecar{cfg: cfg, sem: make(chan struct{}, 1)}
		p.sidecars[k] = s
	}
	s.users++
	return s
}

// release drops one user of s and stops it when none remain.
func (p *Pool) release(s *sidecar) error {
	p.mu.Lock()
	s.users--
	last := s.users <= 0
	if last && p.sidecars[s.cfg.key()] == s {
		delete(p.sidecars, s.cfg.key())
	}
	p.mu.Unlock()
	if !last {
		return nil
	}
	return s.stop()
}

// Close ends the pool: every sidecar still running is stopped (SIGTERM,
// the grace period, SIGKILL) and reaped, and none starts again; an agent
// or embedder of the pool still open fails its next call saying so. It
// is the end of the run (or runs) that owned the pool; later calls do
// nothing.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	all := make([]*sidecar, 0, len(p.sidecars))
	for _, s := range p.sidecars {
		all = append(all, s)
	}
	clear(p.sidecars)
	p.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
	return nil
}

// sidecar is one llama-server process slot: started on demand, restarted
// after it dies.
type sidecar struct {
	cfg    sidecarConfig
	users  int           // guarded by Pool.mu
	sem    chan struct{} // held while starting or stopping
	proc   *process      // guarded by sem; nil when not running
	closed bool          // guarded by sem; stopped for good (no users, or the pool closed)
}

// process is one running llama-server, run by internal/base/supervise: its own
// process group and, on Linux, death with kitsoki.
type process struct {
	sup     *supervise.Process
	baseURL string
	done    <-chan struct{} // closed once the process has been reaped
	tail    *tailBuffer
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitReason describes how p ended, with the end of its output.
func (p *process) exitReason() string {
	msg := "exited"
	if exit, ok := p.sup.Exit(); ok && (exit.State == nil || !exit.State.Success()) {
		msg = exit.String()
	}
	if t := p.tail.last(); t != "" {
		msg += "; last output: " + t
	}
	return msg
}

func (s *sidecar) lock(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sidecar) unlock() { <-s.sem }

// endpoint returns the base URL of a healthy server, starting one if none
// runs. When the previous process had died, it is restarted and restarted
// describes the crash so the caller can record it.
func (s *sidecar) endpoint(ctx context.Context) (p *process, restarted string, err error) {
	if err := s.lock(ctx); err != nil {
		return nil, "", err
	}
	defer s.unlock()
	if s.closed {
		return nil, "", &startError{err: errPoolClosed}
	}
	if s.proc != nil && !s.proc.exited() {
		return s.proc, "", nil
	}
	if s.proc != nil {
		restarted = "llama-server had died (" + s.proc.exitReason() + "); restarted it"
		s.cfg.logger.Warn("local_llm: sidecar died; restarting", "reason", s.proc.exitReason())
		s.proc = nil
	}
	p, err = s.start(ctx)
	if err != nil {
		return nil, restarted, err
	}
	s.proc = p
	return p, restarted, nil
}

// forget drops p after the caller has reported its crash, so the next call
// restarts without reporting it a second time.
func (s *sidecar) forget(p *process) {
	s.sem <- struct{}{}
	if s.proc == p {
		s.proc = nil
	}
	<-s.sem
}

// startError marks a failure to fetch (transport) or to run (crash).
type startError struct {
	crash bool
	err   error
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// start fetches what is missing, spawns llama-server and waits for it to
// report healthy.
func (s *sidecar) start(ctx context.Context) (*process, error) {
	c := s.cfg
	bin := c.serverBin
	if bin == "" {
		b, err := FetchServer(ctx, c.opts)
		if err != nil {
			return nil, &startError{err: err}
		}
		bin = b
	}
	model, err := FetchModel(ctx, c.model, c.opts)
	if err != nil {
		return nil, &startError{err: err}
	}
	port := c.port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, &startError{crash: true, err: err}
		}
	}
	args := append([]string{"-m", model, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--parallel", strconv.Itoa(c.parallel)}, c.extraArgs...)
	env := os.Environ()
	if lib := serverLibDir(bin); lib != "" {
		env = append(env, "LD_LIBRARY_PATH="+joinPathList(lib, os.Getenv("LD_LIBRARY_PATH")))
	}
	tail := &tailBuffer{max: stderrTail}
	sup, err := supervise.Start(supervise.Config{
		Name: "llama-server", Path: bin, Args: args, Env: env,
		Stdout: tail, Stderr: tail, // one pipe: the tail keeps their order
		Grace: c.stopGrace, Logger: c.logger,
	})
	if err != nil {
		return nil, &startError{crash: true, err: fmt.Errorf("spawn %q: %w", bin, err)}
	}
	p := &process{sup: sup, baseURL: "http://127.0.0.1:" + strconv.Itoa(port), done: sup.Done(), tail: tail}
	c.logger.Info("local_llm: started llama-server", "pid", sup.Pid(), "port", port, "model", c.model, "parallel", c.parallel)
	if err := s.waitHealthy(ctx, p); err != nil {
		// Stopped gracefully even when ctx is what ended the wait.
		p.sup.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return p, nil
}

// waitHealthy polls GET /health until it answers 200 (llama-server answers
// 503 while it loads the model), the process dies, the health timeout
// passes or ctx ends.
func (s *sidecar) waitHealthy(ctx context.Context, p *process) error {
	timeout := time.NewTimer(s.cfg.healthTimeout)
	defer timeout.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	wait := healthPollMin
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+"/health", nil)
		if err != nil {
			return &startError{crash: true, err: err}
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return &startError{crash: true, err: fmt.Errorf("llama-server exited before becoming healthy: %s", p.exitReason())}
		case <-timeout.C:
			return &startError{crash: true, err: fmt.Errorf("llama-server did not report healthy on %s/health within %s; last output: %q", p.baseURL, s.cfg.healthTimeout, p.tail.last())}
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, healthPollMax)
	}
}

// stop terminates the running process, if any: SIGTERM to its group, the
// grace period, then SIGKILL; it returns once the process is reaped. A
// stopped sidecar never starts again.
func (s *sidecar) stop() error {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.closed = true
	if s.proc == nil {
		return nil
	}
	s.proc.sup.Stop(context.Background())
	s.proc = nil
	return nil
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before llama-server binds; the server then exits and the
// health gate reports its output.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func joinPathList(first, rest string) string {
	if rest == "" {
		return first
	}
	return first + string(os.PathListSeparator) + rest
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// quoteTail is how much of a dead server's output an error quotes.
const quoteTail = 512

// last returns the final quoteTail bytes written, trimmed: the lines that
// usually say why llama-server stopped.
func (t *tailBuffer) last() string {
	s := strings.TrimSpace(t.String())
	if len(s) > quoteTail {
		s = "..." + s[len(s)-quoteTail:]
	}
	return s
}
