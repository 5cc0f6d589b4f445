package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// TierEmbedding is the tier routing.embedding runs.
const TierEmbedding = "embedding"

// Ranker orders documents by similarity to a query, best first (an
// embedding model: internal/agents/localllm's embedder).
type Ranker interface {
	Rank(ctx context.Context, query string, docs []string) ([]Scored, error)
}

// Scored is one document's place in a ranking.
type Scored struct {
	Index int
	Score float64
}

// WithRanker sets the embedding model the embedding tier ranks intents
// with (routing.embedding); without one the tier does not run.
func WithRanker(r Ranker) Option { return func(s *Session) { s.ranker = r } }

// intentDoc is the text an intent is embedded as: its name, what it does,
// its examples and bare synonyms.
func intentDoc(in *story.Intent) string {
	parts := []string{strings.ReplaceAll(in.Name, "_", " ")}
	if d := firstNonEmpty(in.Description, in.Title); d != "" {
		parts = append(parts, d)
	}
	parts = append(parts, in.Examples...)
	for _, syn := range in.Synonyms {
		if syn.Parts == nil {
			parts = append(parts, syn.Text)
		}
	}
	return strings.Join(parts, ". ")
}

// embeddingRoute is the embedding tier: the routable intents are ranked
// against the text; the top one is the verdict (at its cosine) when it
// reaches confident_bar and leads the second by margin, a tie when it
// reaches the bar without the lead. The verdict is banded like the other
// semantic ones. A failed ranking is no match (logged).
func (s *Session) embeddingRoute(ctx context.Context, text string, words []string) (Route, bool) {
	em := s.story.Routing.Embedding
	if em == nil || !em.Tier || s.ranker == nil || !s.semantic() {
		return Route{}, false
	}
	intents := s.routable()
	if len(intents) == 0 {
		return Route{}, false
	}
	docs := make([]string, len(intents))
	for i, in := range intents {
		docs[i] = intentDoc(in)
	}
	ranked, err := s.ranker.Rank(ctx, text, docs)
	if err != nil || len(ranked) == 0 {
		if err != nil {
			s.logger.Warn("embedding tier: ranking failed; the next tiers route the text", "err", err)
		}
		return Route{}, false
	}
	top := ranked[0]
	if top.Score < em.ConfidentBar {
		return Route{}, false
	}
	if len(ranked) > 1 && top.Score-ranked[1].Score < em.Margin {
		names := []string{intents[top.Index].Name, intents[ranked[1].Index].Name}
		return Route{Tier: TierEmbedding, Confidence: 0.5, Rejection: &Rejection{Code: CodeAmbiguousIntent, Candidates: names, AllowedIntents: names,
			Message: fmt.Sprintf("%q could mean %s; type one of them", strings.TrimSpace(text), strings.Join(names, " or "))}}, true
	}
	in := intents[top.Index]
	return s.band(Route{Tier: TierEmbedding, Intent: in.Name, Confidence: top.Score, Slots: valueSlots(in, words)})
}
