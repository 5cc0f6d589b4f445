// Package mcpguard bounds what an MCP Streamable HTTP endpoint accepts
// before mcp-go's handler sees a request: a request body larger than a
// limit is answered 413 without being read past the limit, and an
// Mcp-Session-Id the endpoint did not mint (or that its client already
// deleted) is answered 404, as the Streamable HTTP transport requires.
// kitsoki's MCP server (internal/agents/toolserver) and the plugin SDK's MCP handler
// (plugin) both use it.
package mcpguard

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultMaxBody is the request-body limit when none is configured: 4 MiB.
const DefaultMaxBody int64 = 4 << 20

// SessionHeader is the header that carries a session id.
const SessionHeader = server.HeaderKeySessionID

// Sessions is a stateful mcp-go SessionIdManager: it mints random ids and
// knows them until the client deletes them. mcp-go's default manager
// accepts any well-formed id, so a made-up one would be served.
type Sessions struct {
	mu   sync.Mutex
	live map[string]struct{}
}

var _ server.SessionIdManager = (*Sessions)(nil)

// NewSessions returns an empty manager.
func NewSessions() *Sessions { return &Sessions{live: map[string]struct{}{}} }

// Generate mints a session id (an initialize request).
func (s *Sessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	id := "mcp-session-" + hex.EncodeToString(b[:])
	s.mu.Lock()
	s.live[id] = struct{}{}
	s.mu.Unlock()
	return id
}

// Validate accepts an id this manager minted and nobody deleted.
func (s *Sessions) Validate(id string) (isTerminated bool, err error) {
	if !s.Known(id) {
		return false, fmt.Errorf("unknown session id %q", id)
	}
	return false, nil
}

// Terminate forgets an id (a DELETE).
func (s *Sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	delete(s.live, id)
	s.mu.Unlock()
	return false, nil
}

// Known reports whether id was minted here and not deleted.
func (s *Sessions) Known(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[id]
	return ok
}

// Guard wraps next, an MCP Streamable HTTP handler whose session ids are
// managed by sessions (nil: no session check), with the body limit
// maxBody (0 or less: DefaultMaxBody):
//
//   - a request declaring a Content-Length over the limit gets 413 before
//     any of its body is read; a body without a length (chunked) is read
//     through http.MaxBytesReader and gets 413 once it passes the limit;
//   - a request carrying an Mcp-Session-Id that sessions does not know
//     gets 404, whatever its method, so a client with a made-up or deleted
//     id starts a new session instead of being served.
func Guard(next http.Handler, maxBody int64, sessions *Sessions) http.Handler {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBody {
			TooLarge(w, maxBody)
			return
		}
		if id := r.Header.Get(SessionHeader); id != "" && sessions != nil && !sessions.Known(id) {
			http.Error(w, "unknown or deleted MCP session: initialize a new one without the Mcp-Session-Id header", http.StatusNotFound)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := readBody(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength)
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					TooLarge(w, maxBody)
					return
				}
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = bufferedBody{bytes.NewReader(body)}
		}
		next.ServeHTTP(w, r)
	})
}

// TooLarge answers 413 and closes the connection (the rest of the body is
// never read).
func TooLarge(w http.ResponseWriter, maxBody int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body too large: the limit is %d bytes", maxBody), http.StatusRequestEntityTooLarge)
}

// bufferedBody is a request body Guard has read in full.
type bufferedBody struct{ *bytes.Reader }

func (bufferedBody) Close() error { return nil }

// readBody reads a request body: into one buffer of the declared length
// when there is one (Guard has checked it against the limit, and net/http
// never reads past it), else growing as io.ReadAll does.
func readBody(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, length)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
