package orchestrator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// chatStub is an in-test OpenAI-compatible server answering every chat
// request with content, and counting requests.
type chatStub struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newChatStub(t testing.TB, content string) *chatStub {
	t.Helper()
	reply, _ := json.Marshal(map[string]any{
		"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"content": content}}},
		"usage":   map[string]any{"prompt_tokens": 7, "completion_tokens": 3},
	})
	cs := &chatStub{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		cs.mu.Lock()
		cs.bodies = append(cs.bodies, body)
		cs.mu.Unlock()
		_, _ = w.Write(reply)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatStub) requests() []map[string]any {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]map[string]any(nil), cs.bodies...)
}

// localFallbackStory is fallbackStory with agent.local a real local_llm
// endpoint (ENDPOINT is replaced by the in-test server's URL).
var localFallbackStory = strings.Replace(fallbackStory, "agent.local: {plugin: builtin.inprocess}",
	`agent.local: {plugin: builtin.local_llm, endpoint: "ENDPOINT", model: tiny, grammar: true}`, 1)

// TestFallbackFromLocalLLM runs the real builtin.local_llm transport (the
// registry builds it from the story's declaration) against an in-test
// server whose answer violates the schema: the agent sends the answer
// back with the violations twice (builtin.openai's repairs, which
// local_llm's calls run through), then the host retries once on
// agent.claude under the same call_id and records the substitution on
// the closing event.
func TestFallbackFromLocalLLM(t *testing.T) {
	for _, claudeOK := range []bool{true, false} {
		name := map[bool]string{true: "claude answers", false: "claude fails too"}[claudeOK]
		t.Run(name, func(t *testing.T) {
			local := newChatStub(t, `{"decision":"maybe","confidence":0.5}`)
			var claudeCalls []string
			claude := &recorder{resp: func(req *agent.AskRequest) (*agent.AskResponse, error) {
				claudeCalls = append(claudeCalls, req.CallID)
				if !claudeOK {
					return &agent.AskResponse{Submission: json.RawMessage(`{"decision":"later"}`)}, nil
				}
				return &agent.AskResponse{Submission: json.RawMessage(`{"decision":"approve","confidence":0.9}`), Meta: map[string]any{"model": "claude-x"}}, nil
			}}
			r := newRig(t, files{"app.yaml": strings.Replace(localFallbackStory, "ENDPOINT", local.URL, 1), "schemas/verdict.json": verdictSchema},
				withAgent(agent.DefaultAlias, claude))
			r.reg.RegisterTransport(agent.PluginLocalLLM, localllm.Builder)
			out := r.do("go")
			if ok := len(out.HostErrors) == 0; ok != claudeOK {
				t.Fatalf("ok = %v, want %v (errors %v)", ok, claudeOK, out.HostErrors)
			}
			if n := len(local.requests()); n != 3 {
				t.Errorf("the local server was asked %d times, want 3 (the answer and two repairs)", n)
			}
			starts := r.events(trace.KindAgentCallStart)
			closing := r.events(trace.KindAgentCallComplete, trace.KindAgentCallError)
			if len(starts) != 1 || len(closing) != 1 || closing[0].CallID != starts[0].CallID {
				t.Fatalf("want one start and one closing event with the same call_id: %d, %d", len(starts), len(closing))
			}
			if len(claudeCalls) != 1 || claudeCalls[0] != starts[0].CallID {
				t.Errorf("agent.claude call ids = %v, want [%s]", claudeCalls, starts[0].CallID)
			}
			if got := jsonOf(t, closing[0].Payload["substitution"]); got != `{"fallback_plugin":"agent.claude","original_plugin":"agent.local","reason":"schema_invalid"}` {
				t.Errorf("substitution = %s", got)
			}
			if claudeOK {
				if closing[0].Kind != trace.KindAgentCallComplete {
					t.Fatalf("closing kind %s", closing[0].Kind)
				}
				if got := jsonOf(t, closing[0].Payload["meta"]); got != `{"fallback_of":"agent.local","model":"claude-x"}` {
					t.Errorf("complete meta = %s", got)
				}
				if got := jsonOf(t, r.sess.World()["verdict"]); got != `{"confidence":0.9,"decision":"approve"}` {
					t.Errorf("bound verdict = %s", got)
				}
				return
			}
			if closing[0].Kind != trace.KindAgentCallError {
				t.Fatalf("closing kind %s, want agent.call.error", closing[0].Kind)
			}
			if e, _ := closing[0].Payload["error"].(string); !strings.HasPrefix(e, "agent: schema_invalid: ") {
				t.Errorf("error payload = %q", e)
			}
		})
	}
}

const lazyStory = `
app: {id: lazy}
agent_plugins:
  agent.local: {plugin: builtin.local_llm, model: test-chat, grammar: true}
  agent.other: {plugin: builtin.inprocess}
world:
  verdict: {type: object, default: {}}
intents: {elsewhere: {}, local: {}}
root: s
states:
  s:
    on:
      elsewhere:
        - target: "."
          effects:
            - invoke: host.agent.decide
              agent: agent.other
              with: {prompt: "judge", schema: schemas/verdict.json}
              bind: {verdict: submitted}
      local:
        - target: "."
          effects:
            - invoke: host.agent.decide
              agent: agent.local
              with: {prompt: "judge", schema: schemas/verdict.json}
              bind: {verdict: submitted}
`

// TestManagedLocalLLMIsLazy: a story that declares a managed local_llm but
// routes its calls elsewhere downloads, caches and spawns nothing; the first
// call routed to it is what fetches (here it stops at a checksum mismatch,
// served on loopback, so nothing is spawned).
func TestManagedLocalLLMIsLazy(t *testing.T) {
	gguf := []byte("stand-in GGUF")
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(gguf))
	}))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256([]byte("other bytes"))
	pins := localllm.Pins{
		Releases: map[string]localllm.Release{"testos/testarch": {Tag: "t", Archive: localllm.Artifact{Name: "release", URL: srv.URL + "/rel.tar.gz", SHA256: hex.EncodeToString(sum[:])}}},
		Models:   map[string]localllm.Model{"test-chat": {ID: "test-chat", File: localllm.Artifact{Name: "model test-chat", URL: srv.URL + "/m.gguf", SHA256: hex.EncodeToString(sum[:])}}},
	}
	cache := filepath.Join(t.TempDir(), "cache")
	var progress bytes.Buffer
	r := newRig(t, files{"app.yaml": lazyStory, "schemas/verdict.json": verdictSchema},
		withAgent("agent.other", answer(`{"decision":"approve","confidence":0.8}`)))
	r.reg.RegisterTransport(agent.PluginLocalLLM, localllm.NewBuilder(localllm.Config{
		Options: localllm.Options{CacheDir: cache, Pins: &pins, Platform: "testos/testarch", Progress: &progress},
		Pool:    localllm.NewPool(),
	}))

	for range 2 {
		if out := r.do("elsewhere"); len(out.HostErrors) != 0 {
			t.Fatal(out.HostErrors)
		}
	}
	if hits != 0 || progress.Len() != 0 {
		t.Errorf("unrouted turns fetched: %d requests, announcements %q", hits, progress.String())
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("unrouted turns touched the cache: %v", err)
	}

	out := r.do("local")
	if len(out.HostErrors) != 1 || !strings.Contains(out.HostErrors[0].Error(), "sha256 mismatch") {
		t.Fatalf("routed call: %v", out.HostErrors)
	}
	if hits == 0 || !strings.Contains(progress.String(), "downloading release …") {
		t.Errorf("the routed call did not fetch: %d requests, announcements %q", hits, progress.String())
	}
}
