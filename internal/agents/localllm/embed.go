package localllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Role is the part a text plays in a retrieval; asymmetric embedding models
// embed queries and documents with different task prefixes.
type Role int

// Roles.
const (
	RoleDocument Role = iota
	RoleQuery
)

// embedModel is how one embedding model wants its input and output treated.
type embedModel struct {
	docPrefix, queryPrefix string
	dims                   int // Matryoshka truncation; 0 keeps the full vector
}

// embedModelFor returns the task prefixes and truncation of a model id:
// nomic-embed-text-v1.5 is asymmetric (search_document: / search_query:)
// and Matryoshka-trained, so its vectors are cut to 256 dimensions;
// bge-small-en-v1.5 prefixes queries only. Other models get neither.
func embedModelFor(id string) (embedModel, bool) {
	switch id {
	case "nomic-embed-text-v1.5":
		return embedModel{docPrefix: "search_document: ", queryPrefix: "search_query: ", dims: 256}, true
	case "bge-small-en-v1.5":
		return embedModel{queryPrefix: "search_query: "}, true
	}
	return embedModel{}, false
}

// EmbeddingArgs returns the llama-server flags that make a sidecar an
// embedding-only server.
func EmbeddingArgs() []string { return []string{"--embeddings", "--pooling", "mean"} }

// EmbedderConfig declares an embedding backend: Endpoint to attach to a
// running embedding server, or Model alone for a managed sidecar (its own
// process, port and GGUF, separate from any chat sidecar).
type EmbedderConfig struct {
	// Model is the embedding model id ("" → nomic-embed-text-v1.5). It picks
	// the task prefixes and, in managed mode, the GGUF.
	Model     string
	Endpoint  string
	Port      int
	ServerBin string
	// CacheDir, when set, keeps vectors on disk there, by content (model
	// and text), across runs (routing.embedding.cache_dir); "" keeps
	// them in memory for the embedder's life only.
	CacheDir string
	// Config supplies fetch options, the pool, the HTTP client and timings.
	Config
}

// LocalEmbedder embeds texts through a llama-server /v1/embeddings endpoint.
// Vectors are used as the server returns them (llama-server with --pooling
// mean returns L2-normalised vectors); ranking uses cosine similarity, which
// does not depend on their norm anyway.
type LocalEmbedder struct {
	cfg     EmbedderConfig
	model   embedModel
	client  *http.Client
	logger  *slog.Logger
	baseURL string // endpoint mode
	cache   *vectorCache
	// cacheWarned is set once a failed cache write was logged.
	cacheWarned bool

	sidecarHold // managed mode: the sidecar, acquired on first use
}

// NewEmbedder validates cfg and returns an embedder that does nothing until
// used.
func NewEmbedder(cfg EmbedderConfig, logger *slog.Logger) (*LocalEmbedder, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Model == "" {
		cfg.Model = cfg.pins().DefaultEmbeddingModel
	}
	m, known := embedModelFor(cfg.Model)
	if cfg.Endpoint == "" {
		if _, err := cfg.pins().model(cfg.Model); err != nil {
			return nil, fmt.Errorf("local embedder: %w", err)
		}
	} else if !known {
		logger.Warn("local_llm embed: unknown embedding model: no task prefixes or truncation applied", "model", cfg.Model)
	}
	// Reuse New's defaults for the shared knobs.
	a, err := New(agent.Declaration{Model: cfg.Model, Endpoint: cfg.Endpoint, ServerBin: cfg.ServerBin}, cfg.Config, logger)
	if err != nil {
		return nil, fmt.Errorf("local embedder: %w", err)
	}
	cfg.Config = a.cfg
	e := &LocalEmbedder{cfg: cfg, model: m, client: a.client, logger: logger, cache: newVectorCache(cfg.Model, m.dims, cfg.CacheDir)}
	if cfg.Endpoint != "" {
		if _, err := url.Parse(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("local embedder: endpoint: %w", err)
		}
		e.baseURL = strings.TrimRight(cfg.Endpoint, "/")
	}
	return e, nil
}

// EmbedderFromDeclaration builds an embedder from an agent_plugins entry
// (plugin: builtin.local_llm) used for embeddings: model: picks the
// embedding model, endpoint: attaches to a running server, port: and
// server_bin: configure a managed one; cfg supplies the rest (the run's
// Pool).
func EmbedderFromDeclaration(decl agent.Declaration, cfg Config, logger *slog.Logger) (*LocalEmbedder, error) {
	return NewEmbedder(EmbedderConfig{Model: decl.Model, Endpoint: decl.Endpoint, Port: decl.Port, ServerBin: decl.ServerBin, Config: cfg}, logger)
}

// prefixed applies the model's task prefix for role.
func (e *LocalEmbedder) prefixed(text string, role Role) string {
	if role == RoleQuery {
		return e.model.queryPrefix + text
	}
	return e.model.docPrefix + text
}

// Embed returns one vector per text, in order.
func (e *LocalEmbedder) Embed(ctx context.Context, texts []string, role Role) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = e.prefixed(t, role)
	}
	return e.embedCached(ctx, in)
}

// Ranked is one document's place in a ranking.
type Ranked struct {
	// Index is the document's position in the input.
	Index int     `json:"index"`
	Doc   string  `json:"doc"`
	Score float64 `json:"score"` // cosine similarity to the query
}

// Rank orders docs by cosine similarity to query, best first (ties keep
// input order). The query and the documents go in one request, each with its
// task prefix.
func (e *LocalEmbedder) Rank(ctx context.Context, query string, docs []string) ([]Ranked, error) {
	if len(docs) == 0 {
		return []Ranked{}, nil
	}
	in := make([]string, 0, len(docs)+1)
	in = append(in, e.prefixed(query, RoleQuery))
	for _, d := range docs {
		in = append(in, e.prefixed(d, RoleDocument))
	}
	vecs, err := e.embedCached(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]Ranked, len(docs))
	for i, d := range docs {
		out[i] = Ranked{Index: i, Doc: d, Score: Cosine(vecs[0], vecs[i+1])}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out, nil
}

// Cosine is the cosine similarity of a and b over their common length; 0
// when either is a zero vector.
func Cosine(a, b []float32) float64 {
	n := min(len(a), len(b))
	var dot, na, nb float64
	for i := 0; i < n; i++ {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

type embedRequest struct {
	Model string   `json:"model,omitempty"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// embedRaw posts already-prefixed input and returns the (truncated) vectors.
func (e *LocalEmbedder) embedRaw(ctx context.Context, input []string) ([][]float32, error) {
	base, err := e.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	buf, err := json.Marshal(embedRequest{Model: e.cfg.Model, Input: input})
	if err != nil {
		return nil, fmt.Errorf("local_llm embed: marshal request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/embeddings", bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("local_llm embed: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("local_llm embed: http do: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("local_llm embed: read response: %w", err)
	}
	if len(raw) > maxBody {
		return nil, fmt.Errorf("local_llm embed: response body exceeds %d MiB: refused", maxBody>>20)
	}
	if resp.StatusCode >= 400 {
		return nil, fmt.Errorf("local_llm embed: http %d: %s", resp.StatusCode, agent.Clip(raw))
	}
	var er embedResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("local_llm embed: unmarshal embeddings response: %w (raw: %s)", err, agent.Clip(raw))
	}
	if len(er.Data) != len(input) {
		return nil, fmt.Errorf("local_llm embed: asked for %d embeddings, got %d (raw: %s)", len(input), len(er.Data), agent.Clip(raw))
	}
	out := make([][]float32, len(input))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("local_llm embed: bad or repeated embedding index %d", d.Index)
		}
		v := d.Embedding
		if e.model.dims > 0 && len(v) > e.model.dims {
			v = v[:e.model.dims]
		}
		out[d.Index] = v
	}
	return out, nil
}

// endpoint returns the server's base URL, starting the managed sidecar when
// needed.
func (e *LocalEmbedder) endpoint(ctx context.Context) (string, error) {
	if e.baseURL != "" {
		return e.baseURL, nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return "", errors.New("local_llm embed: embedder is closed")
	}
	if e.sidecar == nil {
		c := e.cfg.Config
		e.sidecar = c.Pool.acquire(sidecarConfig{
			opts: c.Options, serverBin: e.cfg.ServerBin, model: e.cfg.Model, port: e.cfg.Port,
			parallel: c.Parallel, extraArgs: EmbeddingArgs(), healthTimeout: c.HealthTimeout,
			stopGrace: c.StopGrace, logger: e.logger,
		})
	}
	s := e.sidecar
	e.mu.Unlock()
	p, restarted, err := s.endpoint(ctx)
	if err != nil {
		return "", fmt.Errorf("local_llm embed: managed mode: %w", err)
	}
	if restarted != "" {
		e.logger.Warn("local_llm embed: " + restarted)
	}
	return p.baseURL, nil
}

// Close stops the managed embedding sidecar if this was its last user.
func (e *LocalEmbedder) Close() error {
	return errors.Join(e.sidecarHold.close(e.client, e.cfg.Pool), e.cache.close())
}
