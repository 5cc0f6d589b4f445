package orchestrator

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// lengthRanker ranks shorter documents first; it stands in for embeddings.
type lengthRanker struct{ closed *bool }

func (lengthRanker) Rank(_ context.Context, q string, docs []string) ([]host.Ranked, error) {
	if q == "fail" {
		return nil, errors.New("embedding server down")
	}
	out := make([]host.Ranked, len(docs))
	for i, d := range docs {
		out[i] = host.Ranked{Index: i, Doc: d, Score: 1 / float64(1+len(d))}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

func (l lengthRanker) Close() error { *l.closed = true; return nil }

const searchStory = `
app: {id: search}
agent_plugins:
  agent.embed: {plugin: builtin.local_llm, endpoint: "http://127.0.0.1:9"}
world:
  hits: {type: list}
  best: {type: string}
intents: {find: {slots: {q: {type: string, required: true}}}}
root: s
states:
  s:
    on:
      find:
        - target: "."
          effects:
            - invoke: host.agent.search
              agent: agent.embed
              with: {query: "{{ slots.q }}", documents: ["a long document", "mid doc", "tiny"], top_k: 2}
              bind: {hits: results, best: top}
`

func TestSearch(t *testing.T) {
	closed := false
	var built []agent.Declaration
	r := newRig(t, files{"app.yaml": searchStory}, withHostOpts(host.WithRanker(func(d agent.Declaration) (host.Ranker, io.Closer, error) {
		built = append(built, d)
		lr := lengthRanker{&closed}
		return lr, lr, nil
	})))
	out := r.do("find q=x")
	if len(out.HostErrors) != 0 {
		t.Fatal(out.HostErrors)
	}
	if got := jsonOf(t, r.sess.World()["hits"]); got != `[{"doc":"tiny","index":2,"score":0.2},{"doc":"mid doc","index":1,"score":0.125}]` {
		t.Errorf("hits = %s", got)
	}
	if r.sess.World()["best"] != "tiny" {
		t.Errorf("best = %v", r.sess.World()["best"])
	}
	r.do("find q=y")
	if len(built) != 1 || built[0].Endpoint != "http://127.0.0.1:9" {
		t.Errorf("rankers built: %v (want one, reused)", built)
	}
	out = r.do("find q=fail")
	if len(out.HostErrors) != 1 || !strings.Contains(out.HostErrors[0].Error(), "agent: transport_error: embedding server down") {
		t.Errorf("host errors = %v", out.HostErrors)
	}
	if err := r.host.Close(); err != nil || !closed {
		t.Errorf("Close: err %v, ranker closed %v", err, closed)
	}
}
