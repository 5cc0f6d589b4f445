package localllm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// recorded is one request the in-test OpenAI-compatible server saw.
type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// chatServer is an in-test OpenAI-compatible server. reply answers each
// request (nil → a fixed valid answer); every request is recorded.
type chatServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newChatServer(t *testing.T, reply func(w http.ResponseWriter, body map[string]any)) *chatServer {
	t.Helper()
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		cs.mu.Lock()
		cs.reqs = append(cs.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		cs.mu.Unlock()
		if reply == nil {
			_, _ = io.WriteString(w, `{"model":"served-model","choices":[{"finish_reason":"stop","message":{"content":"{\"verdict\":\"approve\"}"}}],"usage":{"prompt_tokens":12,"completion_tokens":5}}`)
			return
		}
		reply(w, body)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) requests() []recorded {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]recorded(nil), cs.reqs...)
}

func newEndpointAgent(t *testing.T, decl agent.Declaration, cfg Config) *Agent {
	t.Helper()
	if decl.Plugin == "" {
		decl.Plugin = agent.PluginLocalLLM
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) // retries wait on it, not on the wall
	}
	a, err := New(decl, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

const (
	inSubsetSchema  = `{"type":"object","properties":{"verdict":{"type":"string","enum":["approve","reject"]}},"required":["verdict"],"additionalProperties":false}`
	outSubsetSchema = `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}`
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAskRequestShapes(t *testing.T) {
	// strict is builtin.openai's: true only for a schema strict mode takes
	// (every object closed, every property required); llama-server
	// ignores it either way.
	rf := func(schema string) any {
		return map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "submission", "strict": schema == inSubsetSchema, "schema": decode(t, schema)}}
	}
	tests := []struct {
		name        string
		grammar     bool
		jsonSchema  bool
		schema      string
		persona     string
		wantFormat  any // nil: no response_format
		wantGrammar bool
		wantJSON    bool
		wantSkipped string
	}{
		{name: "neither: no schema", grammar: true},
		{name: "neither: grammar off", schema: inSubsetSchema},
		{name: "grammar", grammar: true, schema: inSubsetSchema, persona: "You judge pull requests.", wantFormat: rf(inSubsetSchema), wantGrammar: true},
		{name: "grammar, schema outside the subset", grammar: true, schema: outSubsetSchema, wantSkipped: "uniqueItems at /properties/tags/uniqueItems is outside the llama.cpp grammar subset"},
		{name: "json_schema, any schema", jsonSchema: true, schema: outSubsetSchema, wantFormat: rf(outSubsetSchema), wantJSON: true},
		{name: "json_schema wins over grammar", grammar: true, jsonSchema: true, schema: inSubsetSchema, wantFormat: rf(inSubsetSchema), wantJSON: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, nil)
			a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL + "/", Model: "qwen", Grammar: tc.grammar, JSONSchema: tc.jsonSchema}, Config{})
			ctx := context.Background()
			req := &agent.AskRequest{Verb: "decide", Prompt: "Approve?", CallID: "c1"}
			if tc.schema != "" {
				req.Schema = json.RawMessage(tc.schema)
			}
			call := &agent.Call{Request: req, Model: "qwen", Alias: "agent.local"}
			if tc.persona != "" {
				call.Persona = &agent.Persona{Name: "judge", SystemPrompt: tc.persona}
			}
			resp, err := a.Ask(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			reqs := cs.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			if reqs[0].Path != "/v1/chat/completions" {
				t.Errorf("path = %q", reqs[0].Path)
			}
			if ct := reqs[0].Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if h := reqs[0].Header.Get("Authorization"); h != "" {
				t.Errorf("unexpected Authorization %q", h)
			}
			msgs := []any{}
			if tc.persona != "" {
				msgs = append(msgs, map[string]any{"role": "system", "content": tc.persona})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": "Approve?"})
			want := map[string]any{"model": "qwen", "messages": msgs, "max_tokens": float64(DefaultMaxTokens)}
			if tc.wantFormat != nil {
				want["response_format"] = tc.wantFormat
			}
			if d := cmp.Diff(want, reqs[0].Body); d != "" {
				t.Errorf("request body (-want +got):\n%s", d)
			}
			wantMeta := map[string]any{"provider": "local_llm", "model": "qwen", "grammar": tc.wantGrammar, "json_schema": tc.wantJSON,
				"usage": map[string]any{"input_tokens": int64(12), "output_tokens": int64(5), "cached_input_tokens": int64(0)}}
			if tc.wantSkipped != "" {
				wantMeta["grammar_skipped"] = tc.wantSkipped
			}
			if d := cmp.Diff(wantMeta, pick(resp.Meta, "provider", "model", "grammar", "json_schema", "grammar_skipped", "usage")); d != "" {
				t.Errorf("meta (-want +got):\n%s", d)
			}
			wantSub := `{"verdict":"approve"}`
			if tc.schema == "" { // a free-form answer is the text, as a JSON string
				wantSub = `"{\"verdict\":\"approve\"}"`
			}
			if got := string(resp.Submission); got != wantSub {
				t.Errorf("submission = %s, want %s", got, wantSub)
			}
		})
	}
}

// pick is the keys of meta that are set.
func pick(meta map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := meta[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestAskAPIKey(t *testing.T) {
	const secret = "sk-very-secret-value"
	env := func(vals map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	}
	t.Run("bearer read at call time", func(t *testing.T) {
		cs := newChatServer(t, nil)
		vals := map[string]string{}
		a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL, APIKeyEnv: "GLM_API_KEY"}, Config{LookupEnv: env(vals)})
		vals["GLM_API_KEY"] = secret // set after the build: read per call
		if _, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "hi"})); err != nil {
			t.Fatal(err)
		}
		if got := cs.requests()[0].Header.Get("Authorization"); got != "Bearer "+secret {
			t.Errorf("Authorization = %q", got)
		}
	})
	for _, tc := range []struct {
		name string
		vals map[string]string
	}{{"unset", map[string]string{}}, {"empty", map[string]string{"GLM_API_KEY": ""}}} {
		t.Run(tc.name+" is a hard error, nothing sent", func(t *testing.T) {
			cs := newChatServer(t, nil)
			a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL, APIKeyEnv: "GLM_API_KEY"}, Config{LookupEnv: env(tc.vals)})
			_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "hi"}))
			wantErr(t, err, agent.KindTransportError, "agent: transport_error: local_llm agent: api_key_env GLM_API_KEY is not set: refusing to send an unauthenticated request (export GLM_API_KEY or remove api_key_env:)")
			if n := len(cs.requests()); n != 0 {
				t.Errorf("server saw %d requests, want 0", n)
			}
		})
	}
	t.Run("the key never reaches an error", func(t *testing.T) {
		cs := newChatServer(t, func(w http.ResponseWriter, _ map[string]any) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "bad key Bearer "+secret)
		})
		a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL, APIKeyEnv: "K"}, Config{LookupEnv: env(map[string]string{"K": secret})})
		_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "hi"}))
		wantErr(t, err, agent.KindTransportError, "agent: transport_error: local_llm agent: http 401: bad key Bearer REDACTED")
	})
}

// wantErr checks that err is an AskError of kind with exactly text.
func wantErr(t *testing.T, err error, kind agent.ErrorKind, text string) {
	t.Helper()
	ae, ok := agent.AsAskError(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an AskError", err, err)
	}
	if ae.Kind != kind {
		t.Errorf("kind = %s, want %s", ae.Kind, kind)
	}
	if err.Error() != text {
		t.Errorf("error text:\n got %s\nwant %s", err.Error(), text)
	}
}

func TestAskReplyErrors(t *testing.T) {
	big := strings.Repeat("x", maxBody+10)
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"4xx", 400, "bad request", "agent: transport_error: local_llm agent: http 400: bad request"},
		{"5xx, retried", 503, "loading", "agent: transport_error: local_llm agent: http 503: loading (after 3 attempts)"},
		{"unparseable", 200, "not json", "agent: transport_error: local_llm agent: the answer is not a chat completion: invalid character 'o' in literal null (expecting 'u') (raw: not json)"},
		{"missing choices", 200, `{"usage":{}}`, `agent: transport_error: local_llm agent: the completion has no choices (raw: {"id":"","model":"","choices":null,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}})`},
		{"empty choices", 200, `{"choices":[]}`, `agent: transport_error: local_llm agent: the completion has no choices (raw: {"id":"","model":"","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}})`},
		{"truncated", 200, `{"choices":[{"finish_reason":"length","message":{"content":"{\"verdict\":\"appr"}}]}`, `agent: transport_error: local_llm agent: the answer was cut off at max_tokens 1024: raise max_tokens: under agent_plugins.`},
		{"body over 16 MiB", 200, big, "agent: transport_error: local_llm agent: the answer is larger than 16 MiB: refused"},
		{"long body is clipped", 500, strings.Repeat("e", 300), "agent: transport_error: local_llm agent: http 500: " + strings.Repeat("e", 256) + "... (after 3 attempts)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, func(w http.ResponseWriter, _ map[string]any) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL}, Config{})
			_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "p"}))
			wantErr(t, err, agent.KindTransportError, tc.want)
		})
	}
}

func TestAskFailOpen(t *testing.T) {
	cs := newChatServer(t, func(w http.ResponseWriter, body map[string]any) {
		if _, ok := body["response_format"]; ok {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":400,"message":"JSON schema conversion failed"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"finish_reason":"stop","message":{"content":"{\"verdict\":\"reject\"}"}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)
	})
	a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL, Model: "m", Grammar: true}, Config{})
	resp, err := a.Ask(context.Background(), &agent.Call{Request: &agent.AskRequest{Verb: "decide", Prompt: "p", Schema: json.RawMessage(inSubsetSchema)}, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := cs.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2 (constrained, then unconstrained)", len(reqs))
	}
	if _, ok := reqs[1].Body["response_format"]; ok {
		t.Error("the retry still carried response_format")
	}
	want := map[string]any{"model": "m", "grammar": false, "json_schema": false,
		"fail_open": `http 400: {"error":{"code":400,"message":"JSON schema conversion failed"}}`}
	if d := cmp.Diff(want, pick(resp.Meta, "model", "grammar", "json_schema", "fail_open")); d != "" {
		t.Errorf("meta (-want +got):\n%s", d)
	}
}

func TestAskDeadlines(t *testing.T) {
	release := make(chan struct{})
	cs := newChatServer(t, func(w http.ResponseWriter, _ map[string]any) { <-release })
	t.Cleanup(func() { close(release) })
	a := newEndpointAgent(t, agent.Declaration{Endpoint: cs.URL}, Config{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "p"}))
	wantErr(t, err, agent.KindDeadlineExceeded, "agent: deadline_exceeded: local_llm agent: context already done: context canceled")

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "p"}))
	if ae, ok := agent.AsAskError(err); !ok || ae.Kind != agent.KindDeadlineExceeded || ae.Detail != "local_llm agent: the call ended before the answer came: context deadline exceeded" {
		t.Errorf("hung server: got %v", err)
	}

	// The request's own deadline bounds the call too.
	dl := time.Now().Add(50 * time.Millisecond).Format(time.RFC3339Nano)
	_, err = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "p", Deadline: dl}))
	if ae, ok := agent.AsAskError(err); !ok || ae.Kind != agent.KindDeadlineExceeded {
		t.Errorf("request deadline: got %v", err)
	}
}

func TestAskConnectionRefused(t *testing.T) {
	cs := newChatServer(t, nil)
	url := cs.URL
	cs.Close()
	a := newEndpointAgent(t, agent.Declaration{Endpoint: url}, Config{})
	_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "p"}))
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindTransportError || !strings.HasPrefix(ae.Detail, "local_llm agent: local model server at "+url+"/v1/chat/completions is unreachable after 3 attempts (") ||
		!strings.HasSuffix(ae.Detail, "): check endpoint: under agent_plugins. (and that the server is up)") {
		t.Fatalf("got %v", err)
	}
}

func TestBuilderValidates(t *testing.T) {
	tests := []struct {
		decl agent.Declaration
		want string
	}{
		{agent.Declaration{}, "builtin.local_llm plugin requires model: or endpoint: (model: names a pinned model that kitsoki serves, endpoint: the URL of a server you run)"},
		{agent.Declaration{Endpoint: "127.0.0.1:8080"}, `builtin.local_llm endpoint: "127.0.0.1:8080" is not an http(s) URL (e.g. http://127.0.0.1:8080)`},
		{agent.Declaration{Model: "qwen9"}, `builtin.local_llm: unknown model "qwen9" (pinned models: nomic-embed-text-v1.5, qwen2.5-1.5b-instruct); to use another model run llama-server yourself and use endpoint: mode`},
		{agent.Declaration{Model: "qwen2.5-1.5b-instruct"}, "builtin.local_llm: no pinned llama-server build for plan9/386 (pinned: darwin/arm64, linux/amd64): set server_bin: to a llama-server you built, or use endpoint: mode against a server you run"},
	}
	for _, tc := range tests {
		_, err := NewBuilder(Config{Options: Options{Platform: "plan9/386"}})(tc.decl, agent.BuildEnv{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Builder(%+v) error = %v, want %q", tc.decl, err, tc.want)
		}
	}
}

func TestFallbackEligible(t *testing.T) {
	a, err := Builder(agent.Declaration{Endpoint: "http://127.0.0.1:1"}, agent.BuildEnv{})
	if err != nil {
		t.Fatal(err)
	}
	fe, ok := a.(interface{ FallbackEligible() bool })
	if !ok || !fe.FallbackEligible() {
		t.Error("a local_llm agent must report itself fallback-eligible")
	}
}

// TestTheCallsModelReachesTheEndpoint: an endpoint is asked for the call's
// model (the host resolved it: the declaration's, or a route's), and meta
// reports that model; a call without one sends none and meta reports the
// server's.
func TestTheCallsModelReachesTheEndpoint(t *testing.T) {
	cs := newChatServer(t, nil)
	a := newEndpointAgent(t, agent.Declaration{Alias: "agent.local", Endpoint: cs.URL, Model: "declared"}, Config{})
	req := &agent.AskRequest{Verb: "ask", Prompt: "hi"}
	var metas []any
	for _, model := range []string{"declared", "pinned-small", ""} {
		resp, err := a.Ask(context.Background(), &agent.Call{Request: req, Model: model})
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, resp.Meta["model"])
	}
	rs := cs.requests()
	_, sent := rs[2].Body["model"]
	if rs[0].Body["model"] != "declared" || rs[1].Body["model"] != "pinned-small" || sent {
		t.Errorf("models sent: %v, %v, %v", rs[0].Body["model"], rs[1].Body["model"], rs[2].Body["model"])
	}
	if diff := cmp.Diff([]any{"declared", "pinned-small", "served-model"}, metas); diff != "" {
		t.Errorf("meta.model (-want +got):\n%s", diff)
	}
}
