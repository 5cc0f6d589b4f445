package host

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/number"
)

// SearchNamespace is the invoke name of the document-ranking verb.
const SearchNamespace = AgentNamespace + "search"

// Ranker orders documents by similarity to a query (an embedding backend).
type Ranker interface {
	Rank(ctx context.Context, query string, docs []string) ([]Ranked, error)
}

// Ranked is one document's place in a ranking, best first.
type Ranked struct {
	Index int     `json:"index"`
	Doc   string  `json:"doc"`
	Score float64 `json:"score"`
}

// RankerFor builds the ranker behind an agent_plugins declaration. The
// closer, if any, is closed with the host.
type RankerFor func(decl agent.Declaration) (Ranker, io.Closer, error)

// WithRanker enables host.agent.search with rankers built by f.
func WithRanker(f RankerFor) Option {
	return func(h *Host) {
		h.rankerFor = f
		h.handlers[SearchNamespace] = HandlerFunc(h.search)
	}
}

// search ranks with.documents against with.query through the ranker of the
// invoke's agent: alias. Result data: results (index, doc, score; best
// first, cut to with.top_k when given), top (the best document), ok,
// exit_code.
//
// With with.corpus it is the corpus form instead (corpusSearch).
func (h *Host) search(ctx context.Context, call *Call) (*Result, error) {
	if _, ok := call.Args["corpus"]; ok {
		return h.corpusSearch(ctx, call)
	}
	if h.rankerFor == nil {
		return nil, fmt.Errorf("%s: with.documents needs an embedding backend, and this run has none (a live run has one)", SearchNamespace)
	}
	if call.Invoke == nil || call.Invoke.Agent == "" {
		return nil, fmt.Errorf("%s: name the embedding backend with agent: <alias> (a builtin.local_llm declaration)", SearchNamespace)
	}
	query, _ := call.Args["query"].(string)
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%s: with.query is required", SearchNamespace)
	}
	raw, ok := call.Args["documents"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: with.documents must be a list of texts", SearchNamespace)
	}
	docs := make([]string, len(raw))
	for i, d := range raw {
		s, ok := d.(string)
		if !ok {
			return nil, fmt.Errorf("%s: with.documents[%d] is a %T, want text", SearchNamespace, i, d)
		}
		docs[i] = s
	}
	topK := len(docs)
	if v, ok := call.Args["top_k"]; ok {
		n, ok := number.Whole(v)
		if !ok || n < 1 {
			return nil, fmt.Errorf("%s: with.top_k must be a positive integer, got %v", SearchNamespace, v)
		}
		topK = int(min(n, int64(len(docs))))
	}
	rk, err := h.ranker(call.Invoke.Agent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SearchNamespace, err)
	}
	ranked, err := rk.Rank(ctx, query, docs)
	if err != nil {
		ae, ok := agent.AsAskError(err)
		if !ok {
			ae = &agent.AskError{Kind: agent.KindTransportError, Detail: err.Error(), Err: err}
		}
		return &Result{Data: map[string]any{"ok": false, "exit_code": 1, "error": ae.Error()}, Err: ae}, nil
	}
	ranked = ranked[:min(topK, len(ranked))]
	results := make([]any, len(ranked))
	var top any
	for i, r := range ranked {
		results[i] = map[string]any{"index": int64(r.Index), "doc": r.Doc, "score": r.Score}
		if i == 0 {
			top = r.Doc
		}
	}
	return &Result{Data: map[string]any{"results": results, "top": top, "ok": true, "exit_code": 0}}, nil
}

// ranker returns the alias's ranker, building it once.
func (h *Host) ranker(alias string) (Ranker, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.rankers[alias]; ok {
		return r, nil
	}
	decl, ok := h.registry.Declaration(alias)
	if !ok {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return nil, fmt.Errorf("agent %q is not declared under agent_plugins:", alias)
	}
	if decl.Plugin != agent.PluginLocalLLM {
		return nil, fmt.Errorf("agent %q is a %s plugin; search needs a builtin.local_llm embedding backend", alias, decl.Plugin)
	}
	r, c, err := h.rankerFor(decl)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", alias, err)
	}
	if h.rankers == nil {
		h.rankers = map[string]Ranker{}
	}
	h.rankers[alias] = r
	if c != nil {
		h.closers = append(h.closers, c)
	}
	return r, nil
}
