package kitsoki

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// run is everything one session owns: the driver of the runtime
// internal/run/runtime.Open wired (the one every front end drives), and
// the cassette this package loaded for it.
type run struct {
	story    *story.Story
	d        *driver.Local
	rt       *runtime.Runtime
	sess     *orchestrator.Session
	mem      *trace.MemSink // nil with WithTraceFile
	file     string         // the trace file, "" in memory
	cassette *replay.Cassette
	warnings []string
}

// wire turns the options into a runtime.Config and opens the run with
// runtime.Open, the one place a run is assembled (registry, host, trace,
// session). It adds only what the public API is: options checked against
// the story, the cassette loaded from its path, and the adapters
// (agentAdapter, handlerAdapter) that keep the public func types apart
// from the internal call signatures.
func wire(st *story.Story, cfg *config, plan *driver.Plan) (_ *run, err error) {
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
	if cfg.traceFile != "" {
		// runtime.Open refuses it too, naming the CLI flag.
		if fi, err := os.Stat(cfg.traceFile); err == nil && fi.Size() > 0 {
			return nil, fmt.Errorf("trace %s already holds a session; pass another kitsoki.WithTraceFile path (or remove the file)", cfg.traceFile)
		}
	}
	r := &run{story: st, file: cfg.traceFile}
	rc := runtime.Config{
		Logger:     logger,
		Clock:      clk,
		Trace:      runtime.Trace{Path: cfg.traceFile},
		Agents:     runtime.Agents{Live: true, Override: map[string]agent.Agent{}},
		StrictPins: cfg.strictPins,
		// Session.Warnings reports the pins that are not honoured.
		PinWarning: func(string) {},
		Session: &runtime.Session{ID: cfg.sessionID, World: deepCopyMap(cfg.world), Root: cfg.root,
			Routing: orchestrator.RoutingConfig{Semantic: cfg.semantic, Router: cfg.router, MinConfidence: cfg.minConfidence}},
		// A facade session has no operator: launched agents are not
		// offered the tool that asks one.
		Tools:    runtime.Tools{Autopilot: true},
		Handlers: make(map[string]host.Handler, len(cfg.handlerOrder)),
	}
	if cfg.timeoutSet {
		rc.Timeout = cfg.timeout
	}
	if cfg.cassette != "" {
		c, err := replay.Load(cfg.cassette, cassette.WithSecrets(st.Secrets),
			cassette.WithStrictRequests(cfg.cassetteStrict), cassette.WithClock(clk))
		if err != nil {
			return nil, err
		}
		r.cassette, rc.Cassette = c, c
	} else {
		// Without a cassette, a builtin.inprocess alias no WithAgent
		// supplies fails its calls naming the option (a cassette
		// answers every declared alias).
		for alias, d := range st.Plugins {
			if d.Plugin == agent.PluginInProcess {
				rc.Agents.Override[alias] = unimplemented(alias)
			}
		}
	}
	for _, alias := range cfg.agentOrder {
		a := agentAdapter(cfg.agents[alias], cfg.inline[alias])
		rc.Agents.Override[alias] = a
		if alias == agent.DefaultAlias {
			rc.Agents.Builtin = a
		}
	}
	for _, name := range cfg.handlerOrder {
		rc.Handlers[name] = handlerAdapter(cfg.handlers[name])
	}

	if plan != nil {
		// A durable session: its journal, header and resume are the
		// plan's, and the driver holds the session's writer lock.
		rc.Trace = runtime.Trace{}
		r.file = plan.Trace()
	}
	d, err := driver.OpenLocal(st, rc, plan)
	if err != nil {
		if r.cassette != nil {
			err = errors.Join(err, r.cassette.WriteErr())
		}
		return nil, err
	}
	rt := d.Runtime()
	r.d, r.rt, r.sess, r.mem = d, rt, rt.Session(), rt.Memory()
	for _, d := range st.Warnings {
		r.warnings = append(r.warnings, d.String())
	}
	r.warnings = append(r.warnings, rt.PinWarnings()...)
	return r, nil
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
			return fmt.Errorf("%s(%q): %q is not declared under agent_plugins: in %s (declared: %s); declare it, e.g. %s: {plugin: builtin.inprocess}",
				cfg.agentOption(alias), alias, alias, st.File, strings.Join(slices.Sorted(maps.Keys(st.Plugins)), ", "), alias)
		}
		if cfg.agents[alias] == nil {
			return fmt.Errorf("%s(%q): the agent func is nil", cfg.agentOption(alias), alias)
		}
	}
	if cfg.router != "" {
		if _, ok := st.Plugins[cfg.router]; !ok {
			return fmt.Errorf("kitsoki.WithRouter(%q): %q is not declared under agent_plugins: in %s (declared: %s)",
				cfg.router, cfg.router, st.File, strings.Join(slices.Sorted(maps.Keys(st.Plugins)), ", "))
		}
	}
	if c := cfg.minConfidence; c != nil && (*c < 0 || *c > 1) {
		return fmt.Errorf("kitsoki.WithMinConfidence(%v): the bar must be from 0 to 1", *c)
	}
	if cfg.timeoutSet && cfg.timeout <= 0 {
		return fmt.Errorf("kitsoki.WithAgentTimeout(%s): the deadline must be positive", cfg.timeout)
	}
	invokes := replay.InvokeNames(st)
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

// close releases what wire built: the runtime (host, agents, trace
// file), then the cassette's pending write.
func (r *run) close() error {
	errs := []error{r.d.Close()}
	if r.cassette != nil {
		errs = append(errs, r.cassette.WriteErr())
	}
	return errors.Join(errs...)
}

// unimplemented answers a builtin.inprocess alias no WithAgent (and no
// cassette) supplies. It fails at once, so it answers inline.
func unimplemented(alias string) agent.Agent {
	return agent.InlineFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		return nil, agent.Errorf(agent.KindTransportError,
			"builtin.inprocess agent %q has no implementation: register one with kitsoki.WithAgent(%q, fn)", alias, alias)
	})
}

// agentAdapter turns a public AgentFunc into an agent: an *AgentError
// keeps its kind, any other error is left to the host (plugin_crash). An
// inline one (WithInlineAgent) is asked on the caller's goroutine.
func agentAdapter(fn AgentFunc, inline bool) agent.Agent {
	f := agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		// The func sees the wire request only, as a plugin behind a wire
		// does, and its own copy of the arguments and the world
		// snapshot: writing to them cannot reach the session.
		req := call.Request
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
	if inline {
		return agent.InlineFunc(f)
	}
	return f
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

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return orchestrator.DeepCopy(m).(map[string]any)
}
