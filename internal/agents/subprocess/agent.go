// Package subprocess is the subprocess agent transport: a plugin is a child
// process speaking JSON-RPC 2.0 on its stdin/stdout, one JSON object per
// line, method "agent.ask" (wire-protocols.md §4).
//
// The plugin's lifecycle lives here, like hashicorp/go-plugin: the child
// is spawned on the first Ask (never at story load), reused for the
// session, respawned on the Ask after a crash, and on Close told to stop
// (stdin closed, SIGTERM) then killed after a grace period. The child
// itself is run by internal/base/supervise: a process group of its own and, on
// Linux, death with kitsoki.
package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// Defaults for Options.
const (
	DefaultGracePeriod = 2 * time.Second
	DefaultStderrTail  = 4 << 10
)

type options struct {
	grace      time.Duration
	stderrTail int
	maxMessage int
	logger     *slog.Logger
}

// Option adjusts an Agent.
type Option func(*options)

// WithGracePeriod sets how long Close waits after SIGTERM before SIGKILL.
func WithGracePeriod(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithLogger sets where plugin stderr lines and lifecycle events go.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Agent is a subprocess plugin. It is safe for concurrent use: several Asks
// may be in flight on one process, each matched to its response by id.
type Agent struct {
	decl   agent.Declaration
	opts   options
	nextID atomic.Uint64 // ids start at 1 and are never reused, across respawns

	mu     sync.Mutex
	proc   *process
	closed bool

	watch watchers // observers of process starts and crashes (tools.go)
}

// Build is the registry's builder for plugin: subprocess. It never spawns.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return New(decl, WithLogger(env.Logger))
}

// New returns an agent for decl; nothing starts until the first Ask.
func New(decl agent.Declaration, opts ...Option) (*Agent, error) {
	if decl.Command == "" {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return nil, fmt.Errorf("agent_plugins.%s: subprocess plugin requires command:", decl.Alias)
	}
	a := &Agent{decl: decl, opts: options{
		grace:      DefaultGracePeriod,
		stderrTail: DefaultStderrTail,
		maxMessage: plugin.MaxMessageBytes,
	}}
	for _, o := range opts {
		o(&a.opts)
	}
	if a.opts.logger == nil {
		a.opts.logger = slog.Default()
	}
	a.opts.logger = a.opts.logger.With("transport", agent.PluginSubprocess)
	return a, nil
}

// Ask sends one agent.ask call and waits for its response, the context's
// end, or the plugin's death, whichever comes first.
func (a *Agent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	r, err := a.roundTrip(ctx, plugin.MethodAsk, call.Request, false, true)
	if err != nil {
		return nil, err
	}
	if r.resp != nil {
		return r.resp, nil
	}
	return decodeResult(r.result)
}

// Call sends one JSON-RPC request to the plugin, starting it if none runs,
// and returns the raw result. Ask is Call of agent.ask; other features
// built on the same process (agent tools) use it for their own methods.
// Failures are *agent.AskError as for Ask. A JSON-RPC error response is a
// plugin_crash whose Err is the *jsonrpc2.Error, so errors.As recovers its
// code (for example -32601, method not found).
func (a *Agent) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return a.call(ctx, method, params, false)
}

// call is Call; with notify, a call the caller stops waiting for is also
// cancelled in the plugin with a $/cancelRequest notification naming its
// id.
func (a *Agent) call(ctx context.Context, method string, params any, notify bool) (json.RawMessage, error) {
	r, err := a.roundTrip(ctx, method, params, notify, false)
	return r.result, err
}

// roundTrip is call; with ask, the call is agent.ask and a well-formed
// result may come back decoded (reply.resp).
func (a *Agent) roundTrip(ctx context.Context, method string, params any, notify, ask bool) (reply, error) {
	if err := ctx.Err(); err != nil {
		return reply{}, agent.Errorf(agent.KindDeadlineExceeded, "subprocess agent: context done before the call: %w", err)
	}
	encoded, err := a.encode(params)
	if err != nil {
		return reply{}, err
	}
	defer encoded.release()
	p, err := a.live()
	if err != nil {
		return reply{}, err
	}
	id := a.nextID.Add(1)
	r, err := p.conn.roundTrip(ctx, id, method, encoded.Bytes(), ask)
	if err == nil {
		return r, nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The call stays known to the connection: a late answer is
		// matched to it and dropped.
		if notify {
			cancelInPlugin(p, id)
		}
		return reply{}, agent.Errorf(agent.KindDeadlineExceeded, "subprocess agent: context cancelled waiting for response: %w", err)
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return reply{}, &agent.AskError{Kind: agent.KindPluginCrash,
			Detail: fmt.Sprintf("subprocess agent: rpc error %d: %s", rpcErr.Code, agent.Clip([]byte(rpcErr.Message))), Err: err}
	}
	var we *writeError
	if errors.As(err, &we) {
		p.fail(fmt.Errorf("write to stdin: %w", we.err))
		p.conn.close()
	}
	return reply{}, a.crashed(p)
}

// crashed reports the end of p as a plugin_crash and logs it.
func (a *Agent) crashed(p *process) error {
	cause := "connection closed"
	if c := p.causeErr(); c != nil {
		cause = describe(c)
	}
	detail := redact(p.crashDetail(cause), a.decl.Secrets)
	a.opts.logger.Warn("plugin crashed", "pid", p.pid, "detail", detail)
	return &agent.AskError{Kind: agent.KindPluginCrash, Detail: detail, Err: p.causeErr()}
}

// describe words a connection-ending error as wire-protocols.md §4 does.
func describe(err error) string {
	var fe *plugin.FrameError
	var re *plugin.ReadError
	switch {
	case errors.As(err, &fe) && errors.Is(err, plugin.ErrMessageTooLarge):
		return "response refused: " + fe.Error()
	case errors.As(err, &fe) && errors.Is(err, plugin.ErrInvalidUTF8):
		return "response refused: " + fe.Error()
	case errors.As(err, &fe):
		return "unmarshal response frame: " + fe.Error()
	case errors.As(err, &re):
		return "read response: " + re.Error()
	case errors.Is(err, io.EOF):
		return "read response: EOF (plugin closed stdout)"
	}
	return err.Error()
}

// decodeResult turns a JSON-RPC result into an AskResponse. A result that
// is not an object is refused; the process is kept.
func decodeResult(raw json.RawMessage) (*agent.AskResponse, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, agent.Errorf(agent.KindPluginCrash, "subprocess agent: unmarshal AskResponse: result is %s, want an object", agent.Clip(raw))
	}
	var resp agent.AskResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "subprocess agent: unmarshal AskResponse: %w", err)
	}
	return &resp, nil
}

// live returns the running process, spawning one if there is none or the
// last one is gone.
func (a *Agent) live() (*process, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, agent.Errorf(agent.KindPluginCrash, "subprocess agent: agent is closed")
	}
	if a.proc != nil && a.proc.alive() {
		return a.proc, nil
	}
	p, err := spawn(a.decl, &a.opts)
	seq := a.watch.spawned()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			err = &agent.NotInstalled{Program: a.decl.Command, Err: err}
		}
		ae := agent.Errorf(agent.KindPluginCrash, "subprocess agent: spawn %q: %w", a.decl.Command, err)
		go a.watch.emit(ProcessEvent{Kind: ProcessSpawnFailed, Seq: seq, Detail: ae.Detail})
		return nil, ae
	}
	a.proc = p
	go a.follow(p, seq)
	return p, nil
}

// Close stops the plugin, if one runs: stdin closed, SIGTERM to its
// process group, SIGKILL after the grace period. Calls in flight fail with
// a plugin_crash saying the agent closed. Close is idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	p := a.proc
	a.proc = nil
	a.mu.Unlock()
	if p != nil {
		p.stop()
	}
	return nil
}

// redact hides the declared secrets (values substituted from ${VAR} in
// env:) that a plugin may have printed to stderr, by the one masking rule
// (internal/base/secret): it never rewrites a short value inside a message.
func redact(s string, secrets []string) string {
	return secret.New(secrets).Text(s)
}

// encodedParams is an AskRequest encoded once into a pooled buffer.
type encodedParams struct{ *bytes.Buffer }

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (e encodedParams) release() {
	if e.Cap() <= 1<<20 {
		e.Reset()
		bufPool.Put(e.Buffer)
	}
}

// encode checks and encodes the params once; they are refused before any
// process is involved if they are not valid UTF-8 or too large.
func (a *Agent) encode(req any) (encodedParams, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(req); err != nil {
		bufPool.Put(buf)
		return encodedParams{}, agent.Errorf(agent.KindTransportError, "subprocess agent: encode request: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	switch {
	case !utf8.Valid(buf.Bytes()):
		bufPool.Put(buf)
		return encodedParams{}, agent.Errorf(agent.KindTransportError, "subprocess agent: request refused: %v", plugin.ErrInvalidUTF8)
	case buf.Len()+requestOverhead > a.opts.maxMessage:
		n := buf.Len()
		bufPool.Put(buf)
		return encodedParams{}, agent.Errorf(agent.KindTransportError, "subprocess agent: request refused: %d bytes of params: %v", n, plugin.ErrMessageTooLarge)
	}
	return encodedParams{buf}, nil
}

// requestOverhead bounds the envelope around the params.
const requestOverhead = 64
