package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/claudecli"
	"github.com/kitsoki/kitsoki/internal/agent/localllm"
	"github.com/kitsoki/kitsoki/internal/agent/transports"
	"github.com/kitsoki/kitsoki/internal/demo"
	"github.com/kitsoki/kitsoki/internal/eval"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/mcp"
	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// newHost builds the host a run dispatches through, with every handler this
// build has: the host.agent.* verbs (an invoke without agent: runs the
// Claude Code CLI), and host.agent.search backed by local embedding servers.
// extra options come last (a cassette replay's built-in agent).
func newHost(st *story.Story, reg *agent.Registry, sink host.Sink, logger *slog.Logger, timeout time.Duration, extra ...host.Option) *host.Host {
	return host.New(st, reg, sink, append([]host.Option{
		host.WithLogger(logger),
		host.WithDefaultTimeout(timeout),
		host.WithBuiltin(newBuiltin(st, logger)),
		host.WithRanker(localRanker(logger)),
	}, extra...)...)
}

// newRegistry returns the agent registry of a run of st: every transport
// this build has, the story's declarations, and the demo agent when the
// story declares it.
func newRegistry(st *story.Story, logger *slog.Logger) *agent.Registry {
	reg := agent.NewRegistry(logger)
	transports.Register(reg)
	reg.Configure(st.Plugins)
	demo.Register(reg)
	return reg
}

// newBuiltin returns the agent of the built-in claude path (invokes with no
// agent:), configured from the story's agent.claude declaration: its
// command:, args: and env: apply to every claude call, whichever route it
// takes (its model: through the host, which resolves every call's model).
func newBuiltin(st *story.Story, logger *slog.Logger) *claudecli.Agent {
	claude := st.Plugins[agent.DefaultAlias]
	return claudecli.NewBuiltin(claudecli.Options{
		Command: claude.Command, Args: claude.Args, Env: claude.Env,
		Dir: st.Dir, Secrets: st.Secrets, Logger: logger})
}

// localRanker builds host.agent.search rankers from builtin.local_llm
// declarations (an embedding model, or an endpoint serving /v1/embeddings).
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

// runtimeConfig is what a session needs beyond its story.
type runtimeConfig struct {
	session   string
	trace     string
	syncEvent bool
	world     map[string]any
	root      string
	// title is the run's title from whoever started it ("" for none).
	title   string
	timeout time.Duration
	logger  *slog.Logger
}

// runtime is one running session with everything it owns.
type runtime struct {
	reg   *agent.Registry
	host  *host.Host
	trace *trace.Writer
	sess  *orchestrator.Session
}

// openRuntime wires a story to its agents, its host and a new trace file.
func openRuntime(st *story.Story, c runtimeConfig) (*runtime, error) {
	if c.timeout == 0 {
		c.timeout = host.DefaultTimeout
	}
	if err := ensureNewTrace(c.trace); err != nil {
		return nil, err
	}
	topts := []trace.Option{trace.WithSecrets(st.Secrets), trace.WithLogger(c.logger)}
	if c.syncEvent {
		topts = append(topts, trace.WithSyncPerEvent())
	}
	w, err := trace.Create(c.trace, topts...)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", c.trace, err)
	}
	reg := newRegistry(st, c.logger)
	// selection: pins are honoured here as in kitsoki run; one that cannot
	// be is logged and the call takes its fallback route.
	pins := eval.ResolvePins(st)
	for _, warning := range pins.Warnings {
		c.logger.Warn("selection pin not honoured", "detail", warning)
	}
	var sess *orchestrator.Session
	h := newHost(st, reg, w, c.logger, c.timeout, liveCalls(st, &sess, nil, runFacts{}), host.WithRoutes(pins.Routes))
	opts := []orchestrator.Option{orchestrator.WithSessionID(c.session), orchestrator.WithWorld(c.world), orchestrator.WithLogger(c.logger)}
	if c.root != "" {
		opts = append(opts, orchestrator.WithRoot(c.root))
	}
	if c.title != "" {
		opts = append(opts, orchestrator.WithTitle(c.title))
	}
	sess, err = orchestrator.New(st, h, w, opts...)
	rt := &runtime{reg: reg, host: h, trace: w, sess: sess}
	if err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// Close stops the agents, then closes the host and the trace.
func (r *runtime) Close() error {
	return errors.Join(r.reg.Close(), r.host.Close(), r.trace.Close())
}

// runFacts are what a run's agent calls resolve their MCP tool profile
// from, besides the verb and the title: whether the run is on autopilot (no
// operator to ask) and which tool providers are attached.
type runFacts struct {
	autopilot bool
	providers []string
}

// liveCalls names each agent call's run (agent.Call.Run), so the tools
// kitsoki's MCP server offers the agent (ask the operator, set the title,
// emit an intent…) act on this session. *sess is set once the session
// exists; calls only happen after that. No run of this build is started by
// another run, so HasParent is always false.
func liveCalls(st *story.Story, sess **orchestrator.Session, cat *mcp.Catalog, facts runFacts) host.Option {
	return host.WithRun(func(call *host.Call) *agent.Run {
		s := *sess
		if s == nil {
			return nil
		}
		r := &agent.Run{
			ID: call.SessionID, WorkspaceID: st.App.ID, StoryDir: st.Dir,
			Autopilot: facts.autopilot, ToolProviders: facts.providers,
			TitleOwned: s.TitleOwned(), Live: s.LiveCall(call),
		}
		if cat != nil { // a nil *mcp.Catalog must not become a non-nil interface
			r.Catalog = cat
		}
		return r
	})
}
