package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/localllm"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/story"
)

// newHost builds the host a run dispatches through, with every handler this
// build has: the host.agent.* verbs, and host.agent.search backed by local
// embedding servers. extra options come last (a cassette replay's built-in
// agent).
func newHost(st *story.Story, reg *agent.Registry, sink host.Sink, logger *slog.Logger, timeout time.Duration, extra ...host.Option) *host.Host {
	return host.New(st, reg, sink, append([]host.Option{
		host.WithLogger(logger),
		host.WithDefaultTimeout(timeout),
		host.WithRanker(localRanker(logger)),
	}, extra...)...)
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
