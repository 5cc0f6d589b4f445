// Package hostplugin answers the invokes of a story's host_plugins: each
// declared plugin (host.tickets) is a program that answers every invoke
// under its name (host.tickets.create) over the subprocess agent
// transport's JSON-RPC 2.0 stdio connection and lifecycle, method
// host.invoke; host.describe, when the plugin answers it, lists its ops for
// kitsoki validate (docs/plugins.md, "Host plugins").
//
// The connection, the process (spawned on the first call, reused,
// respawned after a crash, stopped on Close) and every bad-input check are
// internal/agents/subprocess's: a plugin is a subprocess.Agent whose Call
// sends host.invoke instead of agent.ask.
package hostplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/subprocess"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// DefaultTimeout is the hard deadline of a host plugin call whose
// declaration sets no timeout:.
const DefaultTimeout = 10 * time.Minute

// Options are what Register needs besides the host and the story.
type Options struct {
	// Sink is the run's trace sink: a call's call_id is derived from the
	// seq of its harness.dispatched line. Nil derives it from the turn and
	// state only.
	Sink SeqSource
	// Clock measures call deadlines; nil is the system clock.
	Clock clock.Clock
	// Logger receives plugin stderr and lifecycle logs; nil discards them.
	Logger *slog.Logger
	// Grace is how long Close waits after SIGTERM before SIGKILL; 0 is the
	// transport's default.
	Grace time.Duration
}

// SeqSource is the part of a trace sink the handler reads (host.Sink
// has it).
type SeqSource interface {
	// NextSeq is the seq the next event of turn will get.
	NextSeq(turn int64) int
}

// Plugins are the running (or not yet started) host plugins of one run.
// Close stops every process.
type Plugins struct {
	handlers []*Handler
}

// Register installs a handler on h for every host plugin st declares,
// answering the plugin's name and every name under it. Nothing starts
// until a call arrives. The caller closes the result.
func Register(h *host.Host, st *story.Story, opts Options) (*Plugins, error) {
	ps := &Plugins{}
	for _, name := range st.HostPluginNames() {
		hd, err := New(st.HostPlugins[name], st.App.ID, opts)
		if err != nil {
			ps.Close()
			return nil, err
		}
		h.Register(name, hd)
		h.RegisterPrefix(name, hd)
		ps.handlers = append(ps.handlers, hd)
	}
	return ps, nil
}

// Close stops every plugin process and waits until each is reaped.
func (ps *Plugins) Close() error {
	var errs []error
	for _, hd := range ps.handlers {
		errs = append(errs, hd.Close())
	}
	return errors.Join(errs...)
}

var _ io.Closer = (*Plugins)(nil)

// Handler answers the invokes of one host plugin.
type Handler struct {
	decl    *story.HostPlugin
	appID   string
	conn    *subprocess.Agent
	sink    SeqSource
	clock   clock.Clock
	timeout time.Duration
}

// New returns the handler of one host plugin declaration; nothing starts
// until the first call.
func New(decl *story.HostPlugin, appID string, opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	sopts := []subprocess.Option{subprocess.WithLogger(opts.Logger.With("host_plugin", decl.Name))}
	if opts.Grace > 0 {
		sopts = append(sopts, subprocess.WithGracePeriod(opts.Grace))
	}
	conn, err := subprocess.New(agent.Declaration{Alias: decl.Name, Plugin: agent.PluginSubprocess, Command: decl.Command,
		Args: decl.Args, Env: decl.Env, Dir: decl.Dir, Secrets: decl.Secrets, Enabled: true}, sopts...)
	if err != nil {
		return nil, fmt.Errorf("host_plugins.%s: %w", decl.Name, err)
	}
	timeout := decl.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Handler{decl: decl, appID: appID, conn: conn, sink: opts.Sink, clock: opts.Clock, timeout: timeout}, nil
}

// Close stops the plugin's process, if one runs.
func (hd *Handler) Close() error { return hd.conn.Close() }

// Invoke sends one host.invoke. The plugin's data is the result; any
// failure (a JSON-RPC error, a crash, a bad line, the deadline) is the
// result's error, so the invoke's on_error fires.
func (hd *Handler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	req := hd.request(call)
	ctx, cancel := clock.WithTimeout(ctx, hd.clock, hd.timeout)
	defer cancel()
	raw, err := hd.conn.CallCancellable(ctx, plugin.MethodHostInvoke, req)
	if err != nil {
		return &host.Result{Err: hd.callError(err)}, nil
	}
	data, err := decodeData(raw)
	if err != nil {
		return &host.Result{Err: hd.wrap(err)}, nil
	}
	return &host.Result{Data: data}, nil
}

// request builds the params of one call. The reserved call key (the
// invoke's id:) is not an argument.
func (hd *Handler) request(call *host.Call) *plugin.HostInvokeRequest {
	args := make(map[string]any, len(call.Args))
	for k, v := range call.Args {
		if k != "call" {
			args[k] = v
		}
	}
	seq := 0
	if hd.sink != nil {
		seq = hd.sink.NextSeq(call.Turn) - 1 // the call's harness.dispatched line
	}
	return &plugin.HostInvokeRequest{
		Handler: hd.decl.Name,
		Op:      strings.TrimPrefix(strings.TrimPrefix(call.Namespace, hd.decl.Name), "."),
		Args:    args,
		Context: plugin.HostCallContext{
			SessionID: call.SessionID, Turn: call.Turn, StatePath: call.State,
			CallID: trace.CallID(hd.appID, "host:"+trace.LiveCallKey(call.Turn, call.State, seq)),
		},
	}
}

// KindPluginError is the kind of a call the plugin answered with a
// JSON-RPC error: its own failure, not the transport's.
const KindPluginError = "plugin_error"

// CallError is a failed host plugin call: what the invoke's on_error
// handles and world.last_error holds. Kind is KindPluginError or the
// transport's agent.ErrorKind (plugin_crash, deadline_exceeded,
// transport_error); Detail is the transport's detail for the latter.
type CallError struct {
	Handler string
	Kind    string
	Detail  string
	Err     error // the cause: a *jsonrpc2.Error, a frame or read error...
}

// Error reads "host plugin host.tickets: plugin_crash: read response: ...".
func (e *CallError) Error() string {
	return "host plugin " + e.Handler + ": " + e.Kind + ": " + e.Detail
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// callError turns a transport failure into a CallError: a JSON-RPC error
// is the plugin's own answer ("plugin_error: code -32000: no such
// ticket"); anything else keeps the transport's kind and detail (crash,
// bad line, deadline), the handler named in place of the transport.
func (hd *Handler) callError(err error) error {
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return &CallError{Handler: hd.decl.Name, Kind: KindPluginError, Err: rpcErr,
			Detail: fmt.Sprintf("code %d: %s", rpcErr.Code, agent.Clip([]byte(rpcErr.Message)))}
	}
	return hd.wrap(err)
}

// wrap makes an AskError of the transport a CallError.
func (hd *Handler) wrap(err error) error {
	ae, ok := agent.AsAskError(err)
	if !ok {
		return fmt.Errorf("host plugin %s: %w", hd.decl.Name, err)
	}
	return &CallError{Handler: hd.decl.Name, Kind: string(ae.Kind), Err: ae.Err,
		Detail: strings.TrimPrefix(ae.Detail, "subprocess agent: ")}
}

// decodeData reads a host.invoke result: {"data": {...}}. A result that is
// not an object, or whose data is not an object, is refused (the process
// is kept); a missing or null data is no data.
func decodeData(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, agent.Errorf(agent.KindPluginCrash, "unmarshal host.invoke result: result is %s, want an object {\"data\": {...}}", agent.Clip(raw))
	}
	var res struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "unmarshal host.invoke result: %w", err)
	}
	d := bytes.TrimSpace(res.Data)
	if len(d) == 0 || string(d) == "null" {
		return map[string]any{}, nil
	}
	if d[0] != '{' {
		return nil, agent.Errorf(agent.KindPluginCrash, "unmarshal host.invoke result: data is %s, want an object", agent.Clip(d))
	}
	v, err := schema.Decode(d)
	if err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "unmarshal host.invoke result: %w", err)
	}
	return v.(map[string]any), nil
}
