package toolserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
)

// FuzzHTTP sends arbitrary requests to the MCP HTTP handler, in process
// (no listener): HTTPServer.ServeHTTP, so the token check, then mcpguard's
// body limit and session check, then mcp-go's handler. The input is a
// request: the method on the first line, then header lines up to a blank
// line, then the body; "$TOKEN" stands for the session's bearer token and
// "$SESSION" for a session id obtained by an initialize first. The handler
// must not panic, must answer with a valid status (401 with
// WWW-Authenticate when the token is not the session's, 404 for a token
// with an Mcp-Session-Id the session did not mint), and must never echo
// the bearer token.
func FuzzHTTP(f *testing.F) {
	root := testRoot(f)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	profile := mustProfile(f, KanbanTask, []Capability{UserQuestion, TaskTitle}, StoryFilesProvider)
	f.Fuzz(func(t *testing.T, in []byte) {
		method, header, body, ok := splitRequest(in)
		if !ok {
			t.Skip("not a request: a method line and header lines are needed")
		}
		// ListenHTTP without the listener.
		h := &HTTPServer{url: "http://127.0.0.1:0" + EndpointPath, logger: logger,
			maxBody: mcpguard.DefaultMaxBody, sessions: map[[sha256.Size]byte]*httpSession{}}
		s, err := NewSession(SessionConfig{Profile: profile, RunID: "run-7", StoryDir: root,
			Live: newFakeLive(), Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		token := "fuzz-token-0123456789abcdefghijklmnopqrstuvwxyz"
		if err := h.Attach(s, token); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		session := ""
		if bytes.Contains(in, []byte("$SESSION")) {
			rec := serve(h, http.MethodPost, http.Header{
				"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"},
				"Accept": {"application/json, text/event-stream"}},
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"fuzz","version":"1"},"capabilities":{}}}`)
			session = rec.Header().Get("Mcp-Session-Id")
			if session == "" {
				t.Fatalf("initialize gave no session id: %d %s", rec.Code, rec.Body)
			}
		}
		expand := strings.NewReplacer("$TOKEN", token, "$SESSION", session).Replace
		hdr := http.Header{}
		for k, vs := range header {
			for _, v := range vs {
				hdr.Add(k, expand(v))
			}
		}
		rec := serve(h, method, hdr, expand(string(body)))
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		authed := false
		if scheme, tok, ok := strings.Cut(hdr.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) == token {
			authed = true
		}
		if !authed && (rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "") {
			t.Fatalf("a request without the session's token got %d (WWW-Authenticate %q), want 401 with a challenge",
				rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		if id := hdr.Get(mcpguard.SessionHeader); authed && id != "" && id != session && rec.Code != http.StatusNotFound {
			t.Fatalf("a request with the session id %q, which the session did not mint, got %d, want 404", id, rec.Code)
		}
		var out bytes.Buffer
		rec.Header().Write(&out)
		out.Write(rec.Body.Bytes())
		if bytes.Contains(out.Bytes(), []byte(token)) {
			t.Fatalf("the response echoes the bearer token:\n%s", out.Bytes())
		}
	})
}

// splitRequest reads FuzzHTTP's input format.
func splitRequest(in []byte) (method string, header http.Header, body []byte, ok bool) {
	head, body, _ := bytes.Cut(in, []byte("\n\n"))
	r := bufio.NewReader(bytes.NewReader(append(head, '\n')))
	line, err := r.ReadString('\n')
	method = strings.TrimSpace(line)
	if err != nil || !isToken(method) {
		return "", nil, nil, false
	}
	header = http.Header{}
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			break
		}
		k, v, found := strings.Cut(strings.TrimRight(l, "\r\n"), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !found || !isToken(k) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			continue // net/http would refuse the request before any handler saw it
		}
		header.Add(k, v)
	}
	return method, header, body, true
}

// isToken reports whether s is an HTTP token (a method or header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// serve sends one request to h and returns the recorded answer. Streams
// (a GET stream, subscriptions/listen, an SSE answer) end at their first
// flush: the request's context is cancelled then, as a client that hangs
// up would.
func serve(h *HTTPServer, method string, hdr http.Header, body string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, "http://127.0.0.1"+EndpointPath, strings.NewReader(body))
	req.Header = hdr
	rec := httptest.NewRecorder()
	h.ServeHTTP(&hangUp{ResponseRecorder: rec, cancel: cancel}, req)
	return rec
}

// hangUp cancels the request once the handler flushes.
type hangUp struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (w *hangUp) Flush() {
	w.ResponseRecorder.Flush()
	w.cancel()
}
