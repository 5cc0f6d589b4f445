package host

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const searchStory = `app: {id: search}
agent_plugins:
  agent.embed: {plugin: builtin.local_llm, endpoint: "http://127.0.0.1:9"}
  agent.plug: {plugin: builtin.inprocess}
root: s
states: {s: {}}
`

// reverseRanker ranks documents last first, scoring by position.
type reverseRanker struct{ err error }

func (r reverseRanker) Rank(_ context.Context, _ string, docs []string) ([]Ranked, error) {
	if r.err != nil {
		return nil, r.err
	}
	out := make([]Ranked, len(docs))
	for i := range docs {
		j := len(docs) - 1 - i
		out[i] = Ranked{Index: j, Doc: docs[j], Score: float64(len(docs) - i)}
	}
	return out, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestSearch: host.agent.search checks its with: map and its backend,
// ranks through the alias's ranker (built once, closed with the host) and
// binds results (best first, cut to top_k) and top; a ranker's failure is
// the call's error, an AskError kept as it is.
func TestSearch(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(searchStory), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs := []any{"alpha", "beta", "gamma"}
	all := []any{
		map[string]any{"index": int64(2), "doc": "gamma", "score": 3.0},
		map[string]any{"index": int64(1), "doc": "beta", "score": 2.0},
		map[string]any{"index": int64(0), "doc": "alpha", "score": 1.0},
	}
	const ns = "host.agent.search: "
	tests := []struct {
		name      string
		agent     string
		with      map[string]any
		rankErr   error
		buildErr  error
		want      map[string]any
		wantErr   string // an infrastructure failure
		wantCall  string // the call's error (Result.Err)
		wantKind  agent.ErrorKind
		noInvoke  bool
		wantBuilt int
	}{
		{name: "all", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs},
			want: map[string]any{"results": all, "top": "gamma", "ok": true, "exit_code": 0}, wantBuilt: 1},
		{name: "top_k", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs, "top_k": int64(1)},
			want: map[string]any{"results": all[:1], "top": "gamma", "ok": true, "exit_code": 0}, wantBuilt: 1},
		{name: "top_k above the documents", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs, "top_k": 9.0},
			want: map[string]any{"results": all, "top": "gamma", "ok": true, "exit_code": 0}, wantBuilt: 1},
		{name: "no documents", agent: "agent.embed", with: map[string]any{"query": "q", "documents": []any{}},
			want: map[string]any{"results": []any{}, "top": nil, "ok": true, "exit_code": 0}, wantBuilt: 1},
		{name: "no agent", with: map[string]any{"query": "q", "documents": docs},
			wantErr: ns + "name the embedding backend with agent: <alias> (a builtin.local_llm declaration)"},
		{name: "outside a story", noInvoke: true, with: map[string]any{"query": "q", "documents": docs},
			wantErr: ns + "name the embedding backend with agent: <alias> (a builtin.local_llm declaration)"},
		{name: "blank query", agent: "agent.embed", with: map[string]any{"query": "  ", "documents": docs},
			wantErr: ns + "with.query is required"},
		{name: "documents not a list", agent: "agent.embed", with: map[string]any{"query": "q", "documents": "alpha"},
			wantErr: ns + "with.documents must be a list of texts"},
		{name: "a document not text", agent: "agent.embed", with: map[string]any{"query": "q", "documents": []any{"a", int64(2)}},
			wantErr: ns + "with.documents[1] is a int64, want text"},
		{name: "top_k zero", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs, "top_k": 0},
			wantErr: ns + "with.top_k must be a positive integer, got 0"},
		{name: "top_k fractional", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs, "top_k": 1.5},
			wantErr: ns + "with.top_k must be a positive integer, got 1.5"},
		{name: "top_k text", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs, "top_k": "2"},
			wantErr: ns + "with.top_k must be a positive integer, got 2"},
		{name: "undeclared backend", agent: "agent.none", with: map[string]any{"query": "q", "documents": docs},
			wantErr: ns + `agent "agent.none" is not declared under agent_plugins:`},
		{name: "not a local model", agent: "agent.plug", with: map[string]any{"query": "q", "documents": docs},
			wantErr: ns + `agent "agent.plug" is a builtin.inprocess plugin; search needs a builtin.local_llm embedding backend`},
		{name: "the ranker cannot be built", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs},
			buildErr: errors.New("no embedding model"), wantErr: ns + `agent "agent.embed": no embedding model`, wantBuilt: 1},
		{name: "the ranker fails", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs}, rankErr: errors.New("server down"),
			want:     map[string]any{"ok": false, "exit_code": 1, "error": "agent: transport_error: server down"},
			wantCall: "agent: transport_error: server down", wantKind: agent.KindTransportError, wantBuilt: 1},
		{name: "the ranker's AskError", agent: "agent.embed", with: map[string]any{"query": "q", "documents": docs},
			rankErr:  agent.Errorf(agent.KindDeadlineExceeded, "slow"),
			want:     map[string]any{"ok": false, "exit_code": 1, "error": "agent: deadline_exceeded: slow"},
			wantCall: "agent: deadline_exceeded: slow", wantKind: agent.KindDeadlineExceeded, wantBuilt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry(nil)
			reg.Configure(st.Plugins)
			built, closed := 0, 0
			h := New(st, reg, trace.NewMemSink(), WithRanker(func(d agent.Declaration) (Ranker, io.Closer, error) {
				built++
				if d.Endpoint != "http://127.0.0.1:9" {
					t.Errorf("ranker built from %+v", d)
				}
				if tt.buildErr != nil {
					return nil, nil, tt.buildErr
				}
				return reverseRanker{tt.rankErr}, closerFunc(func() error { closed++; return nil }), nil
			}))
			call := &Call{Namespace: SearchNamespace, Args: tt.with}
			if !tt.noInvoke {
				call.Invoke = &story.Invoke{Name: SearchNamespace, Agent: tt.agent}
			}
			for range 2 { // the second call reuses the ranker
				res, err := h.Dispatch(context.Background(), call)
				if tt.wantErr != "" {
					if err == nil || err.Error() != tt.wantErr {
						t.Fatalf("err = %v, want %s", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, res.Data); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
				ae, _ := agent.AsAskError(res.Err)
				switch {
				case tt.wantCall == "" && res.Err != nil:
					t.Errorf("failed: %v", res.Err)
				case tt.wantCall != "" && (ae == nil || ae.Error() != tt.wantCall || ae.Kind != tt.wantKind):
					t.Errorf("Err = %v, want %s %s", res.Err, tt.wantKind, tt.wantCall)
				}
			}
			wantBuilt := tt.wantBuilt
			if tt.buildErr != nil {
				wantBuilt = 2 // a failed build is tried again
			}
			if built != wantBuilt {
				t.Errorf("ranker built %d times, want %d", built, wantBuilt)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			if wantClosed := min(built, 1); tt.buildErr == nil && closed != wantClosed {
				t.Errorf("ranker closed %d times, want %d", closed, wantClosed)
			}
		})
	}
}
