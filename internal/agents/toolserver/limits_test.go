package toolserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// endless is a request body that never ends and counts what was read.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func mcpRequest(method, url, token, body string) *http.Request {
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// An oversized body with a valid token is answered 413, and the server
// reads no further than the limit: nothing at all when Content-Length says
// it is too large, at most limit+1 bytes of a chunked one.
func TestHTTPBodyLimit(t *testing.T) {
	const limit = 64 << 10
	h, err := ListenHTTP("", nil, WithMaxBodyBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	tests := []struct {
		name          string
		contentLength int64 // -1: chunked
		maxRead       int64
	}{
		{"declared length over the limit", 200 << 20, 0},
		{"chunked body over the limit", -1, limit + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &endless{}
			req := mcpRequest(http.MethodPost, h.URL(), s.Token(), "")
			req.Body, req.ContentLength = io.NopCloser(body), tt.contentLength
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d, want 413: %s", rec.Code, rec.Body)
			}
			if want := "request body too large: the limit is 65536 bytes\n"; rec.Body.String() != want {
				t.Errorf("body %q, want %q", rec.Body, want)
			}
			if got := body.n.Load(); got > tt.maxRead {
				t.Errorf("read %d bytes of the body, want at most %d", got, tt.maxRead)
			}
		})
	}
	// A body within the limit is served.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mcpRequest(http.MethodPost, h.URL(), s.Token(), initializeBody+strings.Repeat(" ", limit-len(initializeBody))))
	if rec.Code != http.StatusOK {
		t.Errorf("a body of exactly the limit: status %d: %s", rec.Code, rec.Body)
	}
}

func TestHTTPBodyLimitDefault(t *testing.T) {
	h := listen(t)
	if h.MaxBodyBytes() != 4<<20 || mcpguard.DefaultMaxBody != 4<<20 {
		t.Fatalf("default limit = %d, want 4 MiB", h.MaxBodyBytes())
	}
	s := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	req := mcpRequest(http.MethodPost, h.URL(), s.Token(), "")
	req.Body, req.ContentLength = io.NopCloser(&endless{}), 4<<20+1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("4 MiB + 1: status %d, want 413", rec.Code)
	}
}

// A made-up session id, and one its client deleted, are answered 404 for
// every method (MCP Streamable HTTP: the client must then initialize a new
// session); a live one is served.
func TestHTTPUnknownSession404(t *testing.T) {
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	do := func(method, session, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, h.URL(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = mcpRequest(method, h.URL(), s.Token(), "").Header
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if method == http.MethodGet && res.StatusCode == http.StatusOK {
			return res, "" // an event stream: not read to its end
		}
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, _ := do(http.MethodPost, "", initializeBody)
	live := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || live == "" {
		t.Fatalf("initialize: status %d, session %q", res.StatusCode, live)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if res, body := do(http.MethodPost, live, list); res.StatusCode != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Fatalf("live session: status %d: %s", res.StatusCode, body)
	}
	const wantBody = "unknown, deleted or expired MCP session: initialize a new one without the Mcp-Session-Id header\n"
	check := func(what, session string) {
		t.Helper()
		for _, m := range []struct{ method, body string }{{http.MethodPost, list}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
			res, body := do(m.method, session, m.body)
			if res.StatusCode != http.StatusNotFound || body != wantBody {
				t.Errorf("%s session, %s: status %d, body %q; want 404 %q", what, m.method, res.StatusCode, body, wantBody)
			}
		}
	}
	check("made-up", "mcp-session-00000000-0000-0000-0000-000000000000")
	check("made-up", "anything")
	if res, body := do(http.MethodDelete, live, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE live session: status %d: %s", res.StatusCode, body)
	}
	check("deleted", live)
}
