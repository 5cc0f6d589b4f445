package toolserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/loopback"
	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
)

// EndpointPath is the path of kitsoki's MCP endpoint.
const EndpointPath = "/mcp"

// HTTPServer serves MCP sessions over Streamable HTTP on a loopback
// address. Every session has its own bearer token: a request is routed to
// the session whose token it carries, a missing or unknown token gets 401,
// and a closed session's token stops working. Both protocol generations
// are served: session-based clients (2025-06-18, 2025-11-25) get
// notifications on their GET stream, stateless (2026-07-28) clients through
// subscriptions/listen.
//
// Before the token, a request over loopback that names another host or
// comes from another site's page (DNS rebinding) is answered 403. A
// refused request's body is never read. Past the token, a request body
// over the limit (WithMaxBodyBytes, default 4 MiB) is answered 413
// without being read past the limit, one that has not arrived within the
// body timeout (WithBodyTimeout, default 10s) 408, an Mcp-Session-Id the
// session did not mint, or whose client deleted it, or that idled out, is
// answered 404, and an initialize past the cap of live MCP sessions per
// token (WithSessionLimits, default 100, idle after 30 minutes) 503.
type HTTPServer struct {
	ln          net.Listener
	srv         *http.Server
	url         string
	logger      *slog.Logger
	maxBody     int64
	bodyTimeout time.Duration
	maxSessions int
	idle        time.Duration
	clock       clock.Clock

	mu       sync.RWMutex
	sessions map[[sha256.Size]byte]*httpSession
	closed   bool
}

type httpSession struct {
	s       *Session
	handler *server.StreamableHTTPServer
	guarded http.Handler // handler behind the body limit and session check
}

// HTTPOption configures an HTTPServer.
type HTTPOption func(*HTTPServer)

// WithMaxBodyBytes sets the request-body limit; n <= 0 means the default,
// mcpguard.DefaultMaxBody (4 MiB).
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(h *HTTPServer) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithBodyTimeout bounds how long a request body may take to arrive;
// d <= 0 means mcpguard.DefaultBodyTimeout (10s).
func WithBodyTimeout(d time.Duration) HTTPOption {
	return func(h *HTTPServer) { h.bodyTimeout = d }
}

// WithSessionLimits caps the live MCP sessions each token may hold at n
// and expires one after idle without a request; zero values mean the
// defaults (mcpguard.DefaultMaxSessions, mcpguard.DefaultIdleTimeout).
func WithSessionLimits(n int, idle time.Duration) HTTPOption {
	return func(h *HTTPServer) { h.maxSessions, h.idle = n, idle }
}

// WithClock measures sessions' idle time on c (default: the system
// clock).
func WithClock(c clock.Clock) HTTPOption {
	return func(h *HTTPServer) { h.clock = c }
}

// ListenHTTP starts an HTTPServer on addr, which must be a loopback
// address ("" means 127.0.0.1 on a free port).
func ListenHTTP(addr string, logger *slog.Logger, opts ...HTTPOption) (*HTTPServer, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mcp http: address %q: %w (want host:port, e.g. 127.0.0.1:7400)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("mcp http: address %q is not a loopback address; kitsoki's MCP server only listens on 127.0.0.1 or ::1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mcp http: listen on %s: %w", addr, err)
	}
	h := &HTTPServer{
		ln:       ln,
		url:      "http://" + ln.Addr().String() + EndpointPath,
		logger:   logger,
		maxBody:  mcpguard.DefaultMaxBody,
		sessions: map[[sha256.Size]byte]*httpSession{},
	}
	for _, o := range opts {
		o(h)
	}
	// Headers must arrive within 10s (bodies: the guard's body timeout),
	// and an idle keep-alive connection is closed after a minute.
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("mcp http server stopped", "err", err)
		}
	}()
	return h, nil
}

// URL is the MCP endpoint, e.g. http://127.0.0.1:41234/mcp.
func (h *HTTPServer) URL() string { return h.url }

// Open builds a session from cfg, gives it a fresh random bearer token and
// starts routing requests carrying that token to it. Closing the session
// revokes the token.
func (h *HTTPServer) Open(cfg SessionConfig) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = h.logger
	}
	s, err := NewSession(cfg)
	if err != nil {
		return nil, err
	}
	token, err := NewToken()
	if err == nil {
		err = h.Attach(s, token)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Attach starts routing requests carrying token to s, a session built with
// NewSession and not yet attached anywhere. Closing the session revokes the
// token. Open is NewSession, a fresh token and Attach.
func (h *HTTPServer) Attach(s *Session, token string) error {
	ids := mcpguard.NewSessions(mcpguard.WithClock(h.clock),
		mcpguard.WithMaxSessions(h.maxSessions), mcpguard.WithIdleTimeout(h.idle))
	handler := server.NewStreamableHTTPServer(s.srv,
		server.WithStreamableHTTPLogger(h.logger), server.WithSessionIdManager(ids))
	guarded := mcpguard.Guard(handler, h.maxBody, ids, mcpguard.WithBodyTimeout(h.bodyTimeout))
	hs := &httpSession{s: s, handler: handler, guarded: guarded}
	key := sha256.Sum256([]byte(token))
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("mcp http: server is closed")
	}
	h.sessions[key] = hs
	h.mu.Unlock()
	s.token, s.url = token, h.url
	s.onClose = func() {
		h.mu.Lock()
		delete(h.sessions, key)
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.handler.CloseSessions(ctx)
	}
	return nil
}

// NewToken returns a fresh random bearer token (256 bits, URL-safe).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mcp: token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ServeHTTP checks the request is addressed to loopback, authenticates
// it and hands it to its session; nothing of the body is read before the
// token is known. Tokens are looked up by their SHA-256, so the
// comparison leaks nothing about a valid token.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := loopback.Check(r); err != nil {
		loopback.Forbid(w, err)
		return
	}
	if r.URL.Path != EndpointPath {
		mcpguard.Refuse(w, "404 page not found", http.StatusNotFound)
		return
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	var hs *httpSession
	if ok {
		key := sha256.Sum256([]byte(token))
		h.mu.RLock()
		hs = h.sessions[key]
		h.mu.RUnlock()
	}
	if hs == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kitsoki"`)
		mcpguard.Refuse(w, "unauthorized: a valid bearer token for a live kitsoki MCP session is required", http.StatusUnauthorized)
		return
	}
	hs.guarded.ServeHTTP(w, r)
}

// MaxBodyBytes is the request-body limit.
func (h *HTTPServer) MaxBodyBytes() int64 { return h.maxBody }

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Close closes every session, then the listener. Open streams are ended
// first so the shutdown does not wait on them.
func (h *HTTPServer) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	var open []*Session
	for _, hs := range h.sessions {
		open = append(open, hs.s)
	}
	h.mu.Unlock()
	for _, s := range open {
		s.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, h.srv.Close())
	}
	return nil
}
