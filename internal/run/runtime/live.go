package runtime

import (
	"context"
	"io"
	"log/slog"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/claudecli"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/agents/transports"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// LiveBuiltin returns the agent of the built-in claude path (invokes with
// no agent:), configured from the story's agent.claude declaration: its
// command:, model:, args: and env: apply to every claude call, whichever
// route it takes. Agents.Live uses it; an eval that shares one built-in
// agent between candidates builds it here.
func LiveBuiltin(st *story.Story, logger *slog.Logger) *claudecli.Agent {
	return liveBuiltin(st, logger, nil)
}

// liveBuiltin is LiveBuiltin on the run's clock (nil: the system clock).
func liveBuiltin(st *story.Story, logger *slog.Logger, clk clock.Clock) *claudecli.Agent {
	claude := st.Plugins[agent.DefaultAlias]
	return claudecli.NewBuiltin(claudecli.Options{
		Command: claude.Command, Args: claude.Args, Env: claude.Env,
		Dir: st.Dir, Secrets: st.Secrets, Logger: logger, Clock: clk})
}

// LiveRegistry returns a registry with every transport this build has,
// st's declarations and the demo agent, as Agents.Live builds it, for a
// caller that shares one registry between runtimes (Agents.Registry). Its
// builtin.local_llm agents start their servers in models, which the
// caller closes after the registry (nil: each managed agent its own).
func LiveRegistry(st *story.Story, logger *slog.Logger, models *localllm.Pool) *agent.Registry {
	return newRegistry(st, logger, true, models)
}

// newRegistry is the one place a run's agent registry is built: the
// story's declarations, and with live every transport this build has
// (local models in the pool models) and the demo agent (when the story
// declares it).
func newRegistry(st *story.Story, logger *slog.Logger, live bool, models *localllm.Pool) *agent.Registry {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := agent.NewRegistry(logger)
	if live {
		transports.Register(reg, models)
	}
	reg.Configure(st.Plugins)
	if live {
		demo.Register(reg)
	}
	return reg
}

// localRanker builds host.agent.search rankers from builtin.local_llm
// declarations (an embedding model, or an endpoint serving /v1/embeddings),
// their managed servers in the pool models.
func localRanker(logger *slog.Logger, models *localllm.Pool) host.RankerFor {
	return func(decl agent.Declaration) (host.Ranker, io.Closer, error) {
		e, err := localllm.EmbedderFromDeclaration(decl, localllm.Config{Pool: models}, logger)
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

// embedRoutingRanker is the embedding tier's Ranker over a local embedder.
type embedRoutingRanker struct{ e *localllm.LocalEmbedder }

func (r embedRoutingRanker) Rank(ctx context.Context, query string, docs []string) ([]orchestrator.Scored, error) {
	ranked, err := r.e.Rank(ctx, query, docs)
	if err != nil {
		return nil, err
	}
	out := make([]orchestrator.Scored, len(ranked))
	for i, x := range ranked {
		out[i] = orchestrator.Scored{Index: x.Index, Score: x.Score}
	}
	return out, nil
}
