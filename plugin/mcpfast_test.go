package plugin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/server"
)

// pathAgent answers as told and notes whether the call came through
// mcp-go (whose tool handlers see a client session in their context).
type pathAgent struct {
	resp    *AskResponse
	err     error
	viaMCP  *atomic.Int32
	viaFast *atomic.Int32
}

func (a pathAgent) Ask(ctx context.Context, _ *AskRequest) (*AskResponse, error) {
	if server.ClientSessionFromContext(ctx) != nil {
		a.viaMCP.Add(1)
	} else {
		a.viaFast.Add(1)
	}
	return a.resp, a.err
}

type exchange struct {
	Status      int
	ContentType string
	Body        string
}

// post sends one request to h, first opening a session-based session when
// session is set, and returns what came back.
func post(t *testing.T, h http.Handler, body string, header map[string]string, session bool) exchange {
	t.Helper()
	sid := ""
	if session {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, r)
		if sid = w.Header().Get("Mcp-Session-Id"); sid == "" {
			t.Fatalf("initialize gave no session: %d %s", w.Code, w.Body)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return exchange{w.Code, w.Header().Get("Content-Type"), w.Body.String()}
}

const (
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"kitsoki","version":"1"}}`
	askArgs    = `"arguments":{"session_id":"s","turn":2,"verb":"decide","prompt":"<p> & é","with":{"x":[1,2.5]}}`
)

var modernHeaders = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask"}

// TestFastToolCallMatchesMCPGo: for every tools/call the fast path takes,
// status, Content-Type and body are byte for byte what mcp-go writes; a
// request it does not take goes to mcp-go.
func TestFastToolCallMatchesMCPGo(t *testing.T) {
	answers := map[string]struct {
		resp *AskResponse
		err  error
	}{
		"submission": {resp: &AskResponse{Submission: []byte(`{"a":"<b> & \u2028 é","n":[1,2.50]}`), Meta: map[string]any{"agent": "x", "n": 1}}},
		"error":      {err: errors.New(`no model for "decide" <here> & there`)},
		"nil answer": {},
		"sub-events": {resp: &AskResponse{Submission: []byte(`true`), SubEvents: []Event{{Kind: "tool_call", Seq: 1}}}},
	}
	requests := []struct {
		name    string
		body    string
		header  map[string]string
		session bool
		fast    bool
	}{
		{"stateless, numeric id", `{"jsonrpc":"2.0","id":1073741824,"method":"tools/call","params":{"name":"ask",` + modernMeta + `,` + askArgs + `}}`, modernHeaders, false, true},
		{"stateless, string id", `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"ask",` + modernMeta + `,` + askArgs + `}}`, modernHeaders, false, true},
		{"session", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask",` + askArgs + `}}`, map[string]string{"MCP-Protocol-Version": "2025-11-25"}, true, true},
		{"session, no version header", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask",` + askArgs + `}}`, nil, true, true},
		{"no arguments", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask"}}`, nil, true, true},
		// Left to mcp-go:
		{"other tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other",` + askArgs + `}}`, nil, true, false},
		{"no session", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask",` + askArgs + `}}`, nil, false, false},
		{"Mcp-Name mismatch", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask",` + modernMeta + `,` + askArgs + `}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, false, false},
		{"version header missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask",` + modernMeta + `,` + askArgs + `}}`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "ask"}, false, false},
		{"arguments not an AskRequest", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{"turn":"two"}}}`, nil, true, false},
		{"arguments with a float turn", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{"turn":2.0}}}`, nil, true, false},
		{"id mcp-go re-encodes", `{"jsonrpc":"2.0","id":"<1>","method":"tools/call","params":{"name":"ask",` + askArgs + `}}`, nil, true, false},
		{"task-augmented", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","task":{"ttl":1000},` + askArgs + `}}`, nil, true, false},
		{"not JSON", `{"jsonrpc":"2.0",`, nil, true, false},
	}
	for aname, ans := range answers {
		for _, rq := range requests {
			t.Run(aname+"/"+rq.name, func(t *testing.T) {
				var viaMCP, viaFast atomic.Int32
				a := pathAgent{resp: ans.resp, err: ans.err, viaMCP: &viaMCP, viaFast: &viaFast}
				want := post(t, mcpHandler(a, false), rq.body, rq.header, rq.session)
				viaMCP.Store(0)
				got := post(t, MCPHandler(a), rq.body, rq.header, rq.session)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("fast path differs from mcp-go (-mcp-go +fast):\n%s", diff)
				}
				if rq.fast && (viaFast.Load() != 1 || viaMCP.Load() != 0) {
					t.Errorf("fast path not taken: %d calls through mcp-go, %d fast", viaMCP.Load(), viaFast.Load())
				}
				if !rq.fast && viaFast.Load() != 0 {
					t.Errorf("fast path took a request mcp-go must answer")
				}
			})
		}
	}
}

// TestFastToolCallOffWithServerOptions: options for mcp-go's server (a
// context func, for one) must apply to every call, so they turn the fast
// path off.
func TestFastToolCallOffWithServerOptions(t *testing.T) {
	var viaMCP, viaFast atomic.Int32
	a := pathAgent{resp: &AskResponse{Submission: []byte(`1`)}, viaMCP: &viaMCP, viaFast: &viaFast}
	h := MCPHandler(a, WithStreamableHTTPOptions(server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context { return ctx })))
	got := post(t, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask",`+modernMeta+`,`+askArgs+`}}`, modernHeaders, false)
	if got.Status != http.StatusOK || viaFast.Load() != 0 || viaMCP.Load() != 1 {
		t.Errorf("status %d, %d fast calls, %d through mcp-go; want every call through mcp-go", got.Status, viaFast.Load(), viaMCP.Load())
	}
}
