package plugin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// countingBody is a request body of endless spaces that counts what was
// read of it.
type countingBody struct{ n int64 }

func (c *countingBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n += int64(len(p))
	return len(p), nil
}

// MCPHandler refuses a body over its limit with 413, reading no further
// than the limit, and answers 404 to a session id it did not mint.
func TestMCPHandlerBounds(t *testing.T) {
	const limit = 1024
	h := MCPHandler(testAgent, WithMaxBodyBytes(limit))
	for _, cl := range []int64{10 << 20, -1} {
		body := &countingBody{}
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Body, req.ContentLength = io.NopCloser(body), cl
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || body.n > limit+1 {
			t.Errorf("Content-Length %d: status %d, read %d bytes; want 413 and at most %d read", cl, rec.Code, body.n, limit+1)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Mcp-Session-Id", "mcp-session-made-up")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("made-up session: status %d, want 404: %s", rec.Code, rec.Body)
	}
}
