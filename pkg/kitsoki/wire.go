package kitsoki

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/claudecli"
	"github.com/kitsoki/kitsoki/internal/agent/localllm"
	"github.com/kitsoki/kitsoki/internal/agent/transports"
	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/routes"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/testrunner"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// runtime is everything one session owns; wire builds it, close releases
// it in reverse order.
type runtime struct {
	story    *story.Story
	reg      *agent.Registry
	host     *host.Host
	sink     traceSink
	mem      *trace.MemSink // nil with WithTraceFile
	file     string         // the trace file, "" in memory
	cassette *testrunner.Cassette
	sess     *orchestrator.Session
	warnings []string
}

// traceSink is a session's trace: a memory sink or a file writer.
type traceSink interface {
	orchestrator.Sink
	Close() error
}

// wire is THE ONE PLACE the public API builds a run: options checked
// against the story, clock, selection: pins, trace sink, agent registry
// (every transport this build has, the in-process Go funcs, the
// cassette), the built-in claude path, host handlers, and the session.
// Everything else in this package only drives what wire returns. When the
// composition root (internal/runtime) lands, this body becomes a call to
// it; the adapters (agentAdapter, handlerAdapter) keep the public types
// apart from the internal call signatures.
func wire(st *story.Story, cfg *config) (_ *runtime, err error) {
	if err := checkOptions(st, cfg); err != nil {
		return nil, err
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.Default()
	}
	var clk clock.Clock = clock.System{}
	if cfg.start != nil {
		clk = clock.NewFake(*cfg.start)
	}
	rt := &runtime{story: st}
	defer func() {
		if err != nil {
			rt.close()
		}
	}()

	pins := routes.Resolve(st)
	if cfg.strictPins {
		if err := pins.Err(); err != nil {
			return nil, err
		}
	}
	for _, d := range st.Warnings {
		rt.warnings = append(rt.warnings, d.String())
	}
	rt.warnings = append(rt.warnings, pins.Warnings...)

	topts := []trace.Option{trace.WithSecrets(st.Secrets), trace.WithLogger(logger), trace.WithClock(clk)}
	if cfg.traceFile == "" {
		rt.mem = trace.NewMemSink(topts...)
		rt.sink = rt.mem
	} else {
		if fi, err := os.Stat(cfg.traceFile); err == nil && fi.Size() > 0 {
			return nil, fmt.Errorf("trace %s already holds a session; pass another kitsoki.WithTraceFile path (or remove the file)", cfg.traceFile)
		}
		w, err := trace.Create(cfg.traceFile, topts...)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", cfg.traceFile, err)
		}
		rt.sink, rt.file = w, cfg.traceFile
	}

	rt.reg = agent.NewRegistry(logger)
	transports.Register(rt.reg)
	rt.reg.Configure(st.Plugins)
	for _, alias := range slices.Sorted(maps.Keys(st.Plugins)) {
		if st.Plugins[alias].Plugin == agent.PluginInProcess {
			rt.reg.RegisterInProcess(alias, unimplemented(alias))
		}
	}
	claude := st.Plugins[agent.DefaultAlias]
	var builtin agent.Agent = claudecli.NewBuiltin(claudecli.Options{
		Command: claude.Command, Args: claude.Args, Env: claude.Env,
		Dir: st.Dir, Secrets: st.Secrets, Logger: logger, Clock: clk})
	if cfg.cassette != "" {
		c, err := testrunner.LoadCassette(cfg.cassette, testrunner.WithSecrets(st.Secrets),
			testrunner.WithStrictRequests(cfg.cassetteStrict), testrunner.WithClock(clk))
		if err != nil {
			return nil, err
		}
		rt.cassette = c
		if b := c.ReplayAgents(st, rt.reg, nil); b != nil {
			builtin = b
		}
	}
	for _, alias := range cfg.agentOrder {
		a := agentAdapter(cfg.agents[alias])
		rt.reg.RegisterInProcess(alias, a)
		if alias == agent.DefaultAlias {
			builtin = a
		}
	}

	hopts := []host.Option{host.WithLogger(logger), host.WithClock(clk), host.WithBuiltin(builtin),
		host.WithRanker(localRanker(logger)), host.WithRoutes(pins.Routes)}
	if cfg.timeoutSet {
		hopts = append(hopts, host.WithDefaultTimeout(cfg.timeout))
	}
	rt.host = host.New(st, rt.reg, rt.sink, hopts...)
	if rt.cassette != nil {
		rt.cassette.ReplayHandlers(rt.host, rt.sink, st.App.ID)
	}
	for _, name := range cfg.handlerOrder {
		rt.host.Register(name, handlerAdapter(cfg.handlers[name]))
	}

	sopts := []orchestrator.Option{orchestrator.WithSessionID(cfg.sessionID), orchestrator.WithWorld(deepCopyMap(cfg.world)),
		orchestrator.WithClock(clk), orchestrator.WithLogger(logger)}
	if cfg.root != "" {
		sopts = append(sopts, orchestrator.WithRoot(cfg.root))
	}
	if rt.sess, err = orchestrator.New(st, rt.host, rt.sink, sopts...); err != nil {
		return nil, err
	}
	return rt, nil
}

// checkOptions refuses options that would be accepted and then ignored:
// an agent alias or a handler name the story never uses, undeclared world
// keys, a strict replay without a cassette.
func checkOptions(st *story.Story, cfg *config) error {
	if cfg.cassetteStrict && cfg.cassette == "" {
		return errors.New("kitsoki.WithCassetteStrict applies to a replay: give kitsoki.WithCassette(path) too")
	}
	for _, alias := range cfg.agentOrder {
		if _, ok := st.Plugins[alias]; !ok {
			return fmt.Errorf("kitsoki.WithAgent(%q): %q is not declared under agent_plugins: in %s (declared: %s); declare it, e.g. %s: {plugin: builtin.inprocess}",
				alias, alias, st.File, strings.Join(slices.Sorted(maps.Keys(st.Plugins)), ", "), alias)
		}
		if cfg.agents[alias] == nil {
			return fmt.Errorf("kitsoki.WithAgent(%q): the agent func is nil", alias)
		}
	}
	if cfg.timeoutSet && cfg.timeout <= 0 {
		return fmt.Errorf("kitsoki.WithAgentTimeout(%s): the deadline must be positive", cfg.timeout)
	}
	invokes := testrunner.InvokeNames(st)
	for _, name := range cfg.handlerOrder {
		if !slices.Contains(invokes, name) {
			return fmt.Errorf("kitsoki.WithHandler(%q): no invoke of %s names %q (invoked: %s)",
				name, st.File, name, strings.Join(invokes, ", "))
		}
		if cfg.handlers[name] == nil {
			return fmt.Errorf("kitsoki.WithHandler(%q): the handler func is nil", name)
		}
	}
	declared := make([]string, 0, len(st.World))
	for _, v := range st.World {
		declared = append(declared, v.Name)
	}
	slices.Sort(declared)
	for _, k := range slices.Sorted(maps.Keys(cfg.world)) {
		if !slices.Contains(declared, k) {
			return fmt.Errorf("kitsoki.WithWorld: %q is not declared in world: of %s (declared: %s)", k, st.File, strings.Join(declared, ", "))
		}
	}
	return nil
}

// close releases what wire built, agents first.
func (rt *runtime) close() error {
	var errs []error
	if rt.reg != nil {
		errs = append(errs, rt.reg.Close())
	}
	if rt.host != nil {
		errs = append(errs, rt.host.Close())
	}
	if rt.sink != nil {
		errs = append(errs, rt.sink.Close())
	}
	if rt.cassette != nil {
		errs = append(errs, rt.cassette.WriteErr())
	}
	return errors.Join(errs...)
}

// unimplemented answers a builtin.inprocess alias no WithAgent (and no
// cassette) supplies.
func unimplemented(alias string) agent.Agent {
	return agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		return nil, agent.Errorf(agent.KindTransportError,
			"builtin.inprocess agent %q has no implementation: register one with kitsoki.WithAgent(%q, fn)", alias, alias)
	})
}

// agentAdapter turns a public AgentFunc into an agent: an *AgentError
// keeps its kind, any other error is left to the host (plugin_crash).
func agentAdapter(fn AgentFunc) agent.Agent {
	return agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		// The func gets its own copy of the arguments and the world
		// snapshot, as a plugin behind a wire does: writing to them
		// cannot reach the session.
		own := *req
		own.With = deepCopyMap(req.With)
		own.World.Vars = deepCopyMap(req.World.Vars)
		resp, err := fn(ctx, &own)
		var ae *AgentError
		if errors.As(err, &ae) {
			return resp, &agent.AskError{Kind: agent.ErrorKind(ae.Kind), Detail: ae.Detail, Err: err}
		}
		return resp, err
	})
}

// handlerAdapter turns a public HandlerFunc into a host handler: the
// returned map is the data bind: reads, an error the call's failure.
func handlerAdapter(fn HandlerFunc) host.Handler {
	return host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		c := Call{Name: call.Namespace, Args: deepCopyMap(call.Args), SessionID: call.SessionID, Turn: call.Turn, State: call.State,
			World: deepCopyMap(call.World)}
		if call.Invoke != nil {
			c.ID = call.Invoke.ID
		}
		data, err := fn(ctx, c)
		return &host.Result{Data: data, Err: err}, nil
	})
}

// localRanker builds host.agent.search rankers from builtin.local_llm
// declarations, as `kitsoki run` does.
func localRanker(logger *slog.Logger) host.RankerFor {
	return func(decl agent.Declaration) (host.Ranker, io.Closer, error) {
		e, err := localllm.EmbedderFromDeclaration(decl, logger)
		if err != nil {
			return nil, nil, err
		}
		return embedRanker{e}, e, nil
	}
}

type embedRanker struct{ e *localllm.LocalEmbedder }

func (r embedRanker) Rank(ctx context.Context, query string, docs []string) ([]host.Ranked, error) {
	ranked, err := r.e.Rank(ctx, query, docs)
	if err != nil {
		return nil, err
	}
	out := make([]host.Ranked, len(ranked))
	for i, x := range ranked {
		out[i] = host.Ranked{Index: x.Index, Doc: x.Doc, Score: x.Score}
	}
	return out, nil
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return orchestrator.DeepCopy(m).(map[string]any)
}
