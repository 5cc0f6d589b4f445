package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

const token = "s3cret-token-value"

func decl(endpoint string) agent.Declaration {
	return agent.Declaration{Alias: "agent.remote", Plugin: agent.PluginMCPHTTP, Endpoint: endpoint,
		Headers: map[string]string{"Authorization": "Bearer " + token}}
}

func newAgent(t testing.TB, d agent.Declaration, opts ...Option) *Agent {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	a, err := New(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func ask(t testing.TB, a *Agent, with map[string]any) (*agent.AskResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return a.Ask(ctx, agent.NewCall(&agent.AskRequest{SessionID: "s1", Turn: 1, Verb: "decide", Prompt: "Decide.", With: with, CallID: "0123456789abcdef"}))
}

func wantAskError(t *testing.T, err error, kind agent.ErrorKind, detail string) {
	t.Helper()
	ae, ok := agent.AsAskError(err)
	if !ok {
		t.Fatalf("error = %v (%T), want *agent.AskError", err, err)
	}
	if ae.Kind != kind {
		t.Errorf("kind = %q, want %q (error: %v)", ae.Kind, kind, err)
	}
	if ae.Detail != detail {
		t.Errorf("detail mismatch (-want +got):\n%s", cmp.Diff(detail, ae.Detail))
	}
}

// headerLog records one header of every request a handler gets.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (h *headerLog) wrap(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Method+" "+r.Header.Get(name))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

func TestStatelessServer(t *testing.T) {
	var auth, session headerLog
	srv := httptest.NewServer(auth.wrap("Authorization", session.wrap("Mcp-Session-Id",
		plugin.MCPHandler(echo.Agent{}))))
	defer srv.Close()
	a := newAgent(t, decl(srv.URL+"/mcp"))
	for range 2 {
		resp, err := ask(t, a, map[string]any{"answer": `{"decision":"approve","why":"<b> & é"}`})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(resp.Submission), `{"decision":"approve","why":"\u003cb\u003e \u0026 é"}`; got != want {
			t.Errorf("submission = %s, want %s", got, want)
		}
		if diff := cmp.Diff(map[string]any{"agent": "echo", "prompt_bytes": float64(7)}, resp.Meta); diff != "" {
			t.Errorf("meta (-want +got):\n%s", diff)
		}
	}
	if v := a.conn.client.ProtocolVersion(); v != "2026-07-28" {
		t.Errorf("negotiated protocol %q, want the stateless 2026-07-28", v)
	}
	for _, h := range auth.all() {
		if h != "POST Bearer "+token {
			t.Errorf("a request carried Authorization %q, want the declared header on every request", h)
		}
	}
	for _, h := range session.all() {
		if h != "POST " {
			t.Errorf("a stateless request carried a session id: %q", h)
		}
	}
}

func TestSessionServerGetsSessionHeaderOnEveryRequest(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			s := newSessionServer(t)
			s.sse = sse
			a := newAgent(t, decl(s.URL()))
			for i := range 2 {
				resp, err := ask(t, a, map[string]any{"answer": i})
				if err != nil {
					t.Fatal(err)
				}
				if got := string(resp.Submission); got != fmt.Sprint(i) {
					t.Errorf("call %d: submission %s", i, got)
				}
			}
			if v := a.conn.client.ProtocolVersion(); v != "2025-11-25" {
				t.Errorf("protocol %q, want 2025-11-25 (the newest session-based revision)", v)
			}
			a.Close()
			got := s.snapshot()
			if got.initialized != 1 || got.toolCalls != 2 {
				t.Errorf("initialize ×%d, tool calls ×%d; want 1 and 2", got.initialized, got.toolCalls)
			}
			if diff := cmp.Diff([]string{"session-1"}, got.deletes); diff != "" {
				t.Errorf("Close did not end the session with a DELETE (-want +got):\n%s", diff)
			}
			for _, p := range got.problems {
				t.Error(p)
			}
			for _, h := range got.auth {
				if !strings.HasSuffix(h, " Bearer "+token) {
					t.Errorf("request without the declared header: %q", h)
				}
			}
		})
	}
}

func TestExpiredSessionReinitializesOnceAndRetries(t *testing.T) {
	s := newSessionServer(t)
	a := newAgent(t, decl(s.URL()))
	if _, err := ask(t, a, map[string]any{"answer": 1}); err != nil {
		t.Fatal(err)
	}
	s.expire()
	resp, err := ask(t, a, map[string]any{"answer": 2})
	if err != nil {
		t.Fatalf("Ask after the session expired: %v", err)
	}
	if string(resp.Submission) != "2" {
		t.Errorf("submission %s", resp.Submission)
	}
	got := s.snapshot()
	if got.initialized != 2 || got.toolCalls != 2 {
		t.Errorf("initialize ×%d, tool calls ×%d; want 2 and 2 (the refused call never reached the tool)", got.initialized, got.toolCalls)
	}
}

func TestSessionExpiringAgainFailsAfterOneRetry(t *testing.T) {
	s := newSessionServer(t)
	s.expireEach = true
	a := newAgent(t, decl(s.URL()))
	_, err := ask(t, a, nil)
	wantAskError(t, err, agent.KindTransportError, "mcp_http agent: http 404: session not found")
	if got := s.snapshot(); got.initialized != 2 || got.toolCalls != 0 {
		t.Errorf("initialize ×%d, tool calls ×%d; want 2 and 0", got.initialized, got.toolCalls)
	}
}

func TestKitsokiSinglePOSTServer(t *testing.T) {
	cases := map[string]func(w http.ResponseWriter, msg rpcMessage){
		"rpc error": func(w http.ResponseWriter, msg rpcMessage) {
			writeRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"only tools/call"}}`, msg.ID))
		},
		"404": func(w http.ResponseWriter, msg rpcMessage) { http.NotFound(w, nil) },
		"405": func(w http.ResponseWriter, msg rpcMessage) {
			http.Error(w, "no", http.StatusMethodNotAllowed)
		},
	}
	for name, initFailure := range cases {
		t.Run(name, func(t *testing.T) {
			s := newKitsokiServer(t, initFailure)
			a := newAgent(t, decl(s.srv.URL+"/mcp"))
			for range 2 {
				resp, err := ask(t, a, map[string]any{"answer": "yes"})
				if err != nil {
					t.Fatal(err)
				}
				if string(resp.Submission) != `"yes"` {
					t.Errorf("submission %s", resp.Submission)
				}
			}
			if !a.conn.single {
				t.Error("not in single-POST mode")
			}
			last := s.bodies[len(s.bodies)-1]
			if last.Method != "tools/call" || last.Params.Name != "ask" || !bytes.Contains(last.Params.Arguments, []byte(`"call_id":"0123456789abcdef"`)) {
				t.Errorf("single POST sent %+v", last)
			}
		})
	}
}

func TestToolResults(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, msg rpcMessage)
		want   string // submission, or the error detail when kind is set
		kind   agent.ErrorKind
	}{
		{"structuredContent wins over text", result(`{"content":[{"type":"text","text":"{\"submission\":2}"}],"structuredContent":{"submission":1}}`), `1`, ""},
		{"text when structuredContent is not an object", result(`{"content":[{"type":"text","text":"{\"submission\":2}"}],"structuredContent":[1]}`), `2`, ""},
		{"first text item", result(`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"{\"submission\":{\"a\":[1,2]}}"}]}`), `{"a":[1,2]}`, ""},
		{"isError", result(`{"content":[{"type":"text","text":"model unavailable"}],"isError":true}`),
			"mcp_http agent: tool returned isError=true: model unavailable", agent.KindTransportError},
		{"no text item", result(`{"content":[]}`), "mcp_http agent: response content has no text item", agent.KindTransportError},
		{"text not an AskResponse", result(`{"content":[{"type":"text","text":"approve"}]}`),
			`mcp_http agent: unmarshal AskResponse from content text: invalid character 'a' looking for beginning of value (text: "approve")`, agent.KindTransportError},
		{"bad structuredContent", result(`{"content":[],"structuredContent":{"submission":1,"meta":[]}}`),
			"mcp_http agent: unmarshal AskResponse from structuredContent: json: cannot unmarshal array into Go struct field AskResponse.meta of type map[string]interface {}", agent.KindTransportError},
		{"no content at all", result(`{}`), "mcp_http agent: content is missing", agent.KindTransportError},
		{"neither result nor error", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			writeRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s}`, msg.ID))
		}, "mcp_http agent: response has neither result nor error", agent.KindTransportError},
		{"json-rpc error", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			writeRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool \"ask\""}}`, msg.ID))
		}, `mcp_http agent: rpc error -32602: unknown tool "ask"`, agent.KindTransportError},
		{"unparseable body", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			writeRaw(w, `{"jsonrpc":"2.0",`)
		}, "mcp_http agent: unmarshal rpc response: unexpected EOF", agent.KindTransportError},
		{"http 500", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			http.Error(w, "internal kaboom", http.StatusInternalServerError)
		}, "mcp_http agent: http 500: internal kaboom", agent.KindTransportError},
		{"http 401 echoing the token", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
		}, "mcp_http agent: http 401: bad credentials: REDACTED", agent.KindTransportError},
		{"body over 16 MiB", func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[{"type":"text","text":"`)
			io.WriteString(w, strings.Repeat("x", plugin.MaxMessageBytes))
			io.WriteString(w, `"}]}}`)
		}, "mcp_http agent: response refused: response body exceeds the 16 MiB limit", agent.KindTransportError},
		{"body not UTF-8", result(`{"content":[{"type":"text","text":"{\"submission\":\"caf` + "\xe9" + `\"}"}]}`),
			"mcp_http agent: response refused: response body is not valid UTF-8", agent.KindTransportError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newCannedServer(t, tc.answer)
			a := newAgent(t, decl(s.URL()))
			resp, err := ask(t, a, nil)
			if tc.kind != "" {
				wantAskError(t, err, tc.kind, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Submission) != tc.want {
				t.Errorf("submission %s, want %s", resp.Submission, tc.want)
			}
		})
	}
}

func result(body string) func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
	return func(w http.ResponseWriter, r *http.Request, msg rpcMessage) { writeJSON(w, msg.ID, body) }
}

func TestIsErrorFromSDKServer(t *testing.T) {
	srv := httptest.NewServer(plugin.MCPHandler(echo.Agent{}))
	defer srv.Close()
	a := newAgent(t, decl(srv.URL+"/mcp"))
	_, err := ask(t, a, map[string]any{"fail": "no model for this verb"})
	wantAskError(t, err, agent.KindTransportError, "mcp_http agent: tool returned isError=true: no model for this verb")
}

func TestDeadline(t *testing.T) {
	s := newCannedServer(t, func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	a := newAgent(t, decl(s.URL()))
	if _, err := ask(t, a, nil); err == nil {
		t.Fatal("want an error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{}))
	wantAskError(t, err, agent.KindDeadlineExceeded, "mcp_http agent: request timed out: context deadline exceeded")
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = a.Ask(ctx, agent.NewCall(&agent.AskRequest{}))
	wantAskError(t, err, agent.KindDeadlineExceeded, "mcp_http agent: request cancelled: context canceled")
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	a := newAgent(t, decl("http://"+addr+"/mcp"), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	_, err = ask(t, a, nil)
	wantAskError(t, err, agent.KindTransportError,
		fmt.Sprintf(`mcp_http agent: initialize: http do: Post "http://%s/mcp": dial tcp %s: connect: connection refused`, addr, addr))
	if strings.Contains(logs.String(), token) {
		t.Errorf("a header value reached the log:\n%s", logs.String())
	}
}

func TestBuildNeverConnects(t *testing.T) {
	s := newSessionServer(t)
	r := agent.NewRegistry(slog.New(slog.DiscardHandler))
	r.RegisterTransport(agent.PluginMCPHTTP, Build)
	r.Configure(map[string]agent.Declaration{"agent.remote": decl(s.URL())})
	a, err := r.Get("agent.remote")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.snapshot(); len(got.auth) != 0 {
		t.Fatalf("building the agent sent %d requests", len(got.auth))
	}
	if _, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{})); err != nil {
		t.Fatal(err)
	}
	r.Close()
	_, err = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{}))
	wantAskError(t, err, agent.KindTransportError, "mcp_http agent: agent is closed")
	for _, bad := range []struct{ endpoint, want string }{
		{"", "agent_plugins.agent.remote: mcp_http plugin requires endpoint:"},
		{"localhost:7301/mcp", `agent_plugins.agent.remote: endpoint "localhost:7301/mcp" is not an http(s) URL`},
	} {
		if _, err := New(decl(bad.endpoint)); err == nil || err.Error() != bad.want {
			t.Errorf("New(%q) = %v, want %s", bad.endpoint, err, bad.want)
		}
	}
}

func TestCustomToolName(t *testing.T) {
	srv := httptest.NewServer(plugin.MCPHandler(echo.Agent{}, plugin.WithToolName("answer")))
	defer srv.Close()
	d := decl(srv.URL + "/mcp")
	d.Tool = "answer"
	a := newAgent(t, d)
	resp, err := ask(t, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Submission); got != `{"call_id":"0123456789abcdef","prompt":"Decide.","verb":"decide"}` {
		t.Errorf("submission %s", got)
	}
}

func TestUnauthorizedInitializeIsReportedNotFallenBackFrom(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "token expired", http.StatusUnauthorized)
	}))
	defer srv.Close()
	a := newAgent(t, decl(srv.URL+"/mcp"))
	_, err := ask(t, a, nil)
	wantAskError(t, err, agent.KindTransportError, "mcp_http agent: initialize: http 401: token expired")
	if a.conn != nil {
		t.Error("a refused initialize left a connection (single-POST fallback) behind")
	}
}

// TestSSEStreamWithServerRequests: on a tools/call answered as an SSE
// stream, notifications are skipped, a ping from the server is answered
// with an empty result and a request kitsoki's client offers nothing for
// (sampling) with an error, on the same session, and the call takes the
// response that follows. The server waits for each answer before it goes
// on, as a server asking its client something does.
func TestSSEStreamWithServerRequests(t *testing.T) {
	answers := make(chan string, 2)
	answered := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg rpcMessage
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		await := func() {
			w.(http.Flusher).Flush()
			select {
			case <-answered:
			case <-r.Context().Done():
			}
		}
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "sse-1")
			writeJSON(w, msg.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sse","version":"1"}}`)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n\n")
			await()
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s2\",\n")
			fmt.Fprint(w, "data:  \"method\":\"sampling/createMessage\",\"params\":{}}\n\n")
			await()
			fmt.Fprintf(w, "id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"submission\\\":\\\"ok\\\"}\"}]}}\n\n", msg.ID)
		case "":
			var reply struct {
				ID     string          `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &reply)
			what := "result " + string(reply.Result)
			if reply.Error != nil {
				what = "error"
			}
			answers <- r.Header.Get("Mcp-Session-Id") + " " + reply.ID + " " + what
			w.WriteHeader(http.StatusAccepted)
			answered <- struct{}{}
		}
	}))
	defer srv.Close()
	a := newAgent(t, decl(srv.URL+"/mcp"))
	resp, err := ask(t, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `"ok"` {
		t.Errorf("submission %s", resp.Submission)
	}
	got := []string{<-answers, <-answers}
	if diff := cmp.Diff([]string{"sse-1 s1 result {}", "sse-1 s2 error"}, got); diff != "" {
		t.Errorf("answers to the server's requests (-want +got):\n%s", diff)
	}
}

// TestStreamEndsWithoutResponse: an SSE stream that ends before the
// response is a transport error saying so.
func TestStreamEndsWithoutResponse(t *testing.T) {
	s := newCannedServer(t, func(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
	})
	a := newAgent(t, decl(s.URL()))
	_, err := ask(t, a, nil)
	wantAskError(t, err, agent.KindTransportError, "mcp_http agent: SSE stream ended without a response")
}
