// Package mcpguard bounds what an MCP Streamable HTTP endpoint accepts
// before mcp-go's handler sees a request: a request body larger than a
// limit is answered 413 without being read past the limit, a body that
// does not arrive within a time limit is answered 408, an Mcp-Session-Id
// the endpoint did not mint (or that its client deleted, or that idled
// out) is answered 404, as the Streamable HTTP transport requires, and a
// request that would start a session past the cap is answered 503.
// kitsoki's MCP server (internal/agents/toolserver) and the plugin SDK's MCP handler
// (plugin) both use it.
package mcpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultMaxBody is the request-body limit when none is configured: 4 MiB.
const DefaultMaxBody int64 = 4 << 20

// DefaultBodyTimeout is how long a request body may take to arrive, from
// the end of its headers, when none is configured.
const DefaultBodyTimeout = 10 * time.Second

// SessionHeader is the header that carries a session id.
const SessionHeader = server.HeaderKeySessionID

// GuardOption configures Guard.
type GuardOption func(*guard)

// WithBodyTimeout bounds the time a request body may take to arrive
// (d <= 0: DefaultBodyTimeout). A connection's read deadline is a
// wall-clock time, so this is the one limit measured on the system clock.
func WithBodyTimeout(d time.Duration) GuardOption {
	return func(g *guard) {
		if d > 0 {
			g.bodyTimeout = d
		}
	}
}

// Guard wraps next, an MCP Streamable HTTP handler whose session ids are
// managed by sessions (nil: no session check), with the body limit
// maxBody (0 or less: DefaultMaxBody):
//
//   - a request declaring a Content-Length over the limit gets 413 before
//     any of its body is read; a body without a length (chunked) is read
//     through http.MaxBytesReader and gets 413 once it passes the limit;
//   - a body still arriving after the body timeout gets 408 (the
//     connection's read deadline; it is lifted once the body is in, so a
//     GET stream lives on);
//   - a request carrying an Mcp-Session-Id that sessions does not know
//     gets 404, whatever its method, so a client with a made-up, deleted or
//     expired id starts a new session instead of being served;
//   - a request that would mint a session (an initialize, a GET without
//     an id) while sessions is at its cap gets 503, after idle sessions
//     expire; an expired session's state in next is dropped as a DELETE
//     would drop it.
//
// Every refusal closes the connection, so a body nobody wants is never
// read.
func Guard(next http.Handler, maxBody int64, sessions *Sessions, opts ...GuardOption) http.Handler {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	g := &guard{next: next, maxBody: maxBody, sessions: sessions, bodyTimeout: DefaultBodyTimeout}
	for _, o := range opts {
		o(g)
	}
	return g
}

type guard struct {
	next        http.Handler
	maxBody     int64
	sessions    *Sessions
	bodyTimeout time.Duration
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > g.maxBody {
		TooLarge(w, g.maxBody)
		return
	}
	if g.sessions != nil {
		g.forget(r, g.sessions.reap())
	}
	id := r.Header.Get(SessionHeader)
	if id != "" && g.sessions != nil {
		if !g.sessions.enter(id) {
			Refuse(w, "unknown, deleted or expired MCP session: initialize a new one without the Mcp-Session-Id header", http.StatusNotFound)
			return
		}
		defer g.sessions.end(id)
	}
	body, ok := g.readBody(w, r)
	if !ok {
		return
	}
	if id == "" && g.sessions != nil && mints(r, body) {
		if !g.sessions.admit() {
			n, idle := g.sessions.Limits()
			w.Header().Set("Retry-After", "60")
			Refuse(w, fmt.Sprintf("too many live MCP sessions: the limit is %d; end one with DELETE, or wait for one to go %s without a request", n, idle), http.StatusServiceUnavailable)
			return
		}
		defer g.sessions.release()
	}
	g.next.ServeHTTP(w, r)
}

// readBody reads r's body in full under the size and time limits and
// puts it back as a bufferedBody. On a failure it has answered and
// reports false.
func (g *guard) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	rc := http.NewResponseController(w)
	// ErrNotSupported (a recorder in a test) leaves the body unbounded in
	// time; a real connection supports deadlines.
	_ = rc.SetReadDeadline(time.Now().Add(g.bodyTimeout))
	body, err := readAll(http.MaxBytesReader(w, r.Body, g.maxBody), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			TooLarge(w, g.maxBody)
		case errors.Is(err, os.ErrDeadlineExceeded):
			Refuse(w, fmt.Sprintf("request body not received within %s", g.bodyTimeout), http.StatusRequestTimeout)
		default:
			Refuse(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = bufferedBody{bytes.NewReader(body)}
	return body, true
}

// mints reports whether mcp-go may mint a session id for r: a GET
// without one, or a POST whose JSON-RPC method is initialize.
func mints(r *http.Request, body []byte) bool {
	switch r.Method {
	case http.MethodGet:
		return true
	case http.MethodPost:
		if !bytes.Contains(body, []byte(`"initialize"`)) {
			return false
		}
		var m struct {
			Method string `json:"method"`
		}
		return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
	}
	return false
}

// forget drops from next the state of the expired sessions ids, through
// the DELETE a client would send (mcp-go keeps per-session state until
// then).
func (g *guard) forget(r *http.Request, ids []string) {
	for _, id := range ids {
		// A fresh context: the request is kitsoki's own, not one that came
		// over the connection (whose Host mcp-go would check).
		del, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, r.URL.Path, nil)
		if err != nil {
			continue
		}
		del.Header.Set(SessionHeader, id)
		g.next.ServeHTTP(discard{h: http.Header{}}, del)
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// Refuse answers an error and closes the connection without reading
// more of it: net/http would otherwise drain a small unread body after
// the handler returns, which a client dripping its body holds open.
func Refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	http.Error(w, msg, code)
}

// TooLarge answers 413 and closes the connection (the rest of the body is
// never read).
func TooLarge(w http.ResponseWriter, maxBody int64) {
	Refuse(w, fmt.Sprintf("request body too large: the limit is %d bytes", maxBody), http.StatusRequestEntityTooLarge)
}

// bufferedBody is a request body Guard has read in full.
type bufferedBody struct{ *bytes.Reader }

func (bufferedBody) Close() error { return nil }

// readAll reads a request body: into one buffer of the declared length
// when there is one (Guard has checked it against the limit, and net/http
// never reads past it), else growing as io.ReadAll does.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, length)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
