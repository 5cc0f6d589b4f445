// Package web is `kitsoki web`: a server on 127.0.0.1 whose pages play,
// watch and debug stories in the browser. The home page lists the
// stories served and their sessions (start, resume, fork); a session
// page shows the transcript, the state's typed view as HTML (choice
// widgets as buttons and forms), the allowed intents as buttons with
// slot forms, a box for free text routed as the terminal routes it, the
// calls in flight (with cancel), the state diagram with the current
// state and the path taken (internal/view/viz), the trace pane
// (internal/view/traceview), the world (editable with Debug) and the
// eval reports of the story's decisions (internal/view/evalview).
//
// Sessions are driven through Sessions, the session API; updates reach
// the pages as server-sent events. Every request needs the server's
// token (a cookie the printed URL sets) and, over loopback, a loopback
// Host and Origin. The page's assets are embedded; its script builds the
// document from JSON with text nodes only, so nothing a story or an
// agent writes is ever read as markup.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

//go:embed assets
var assets embed.FS

// Config sets up a Server.
type Config struct {
	// Stories are the root files of the stories served (Discover).
	Stories []string
	// Sessions is the session API the server drives (the one `kitsoki
	// session` and the MCP session tools drive). Required.
	Sessions *driver.Sessions
	// Token is what every request must carry (Token, NewToken). Required.
	Token string
	// Workspace is the project's root: a view's media files are read in
	// it or in the story's directory, a relative path against it ("": the
	// story's directory).
	Workspace string
	// Debug lets the page edit the world.
	Debug bool
	// Render draws the state diagram as SVG (viz.HelperRender); nil shows
	// the states as a list only.
	Render viz.RenderFunc
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// MaxLive is how many sessions the server keeps open at most before it
	// closes the least recently used one no page follows (0: 64).
	MaxLive int
	// Heartbeat is how often an idle event stream gets a comment line
	// (0: 25 s).
	Heartbeat time.Duration
	// TurnDone, when set, is called as a turn's update is about to be
	// sent to the pages (a benchmark's hook).
	TurnDone func(id string)
}

// Server serves the pages. Close it to close the sessions it holds.
type Server struct {
	cfg     Config
	stories []*storyInfo
	guard   *guard
	ctx     context.Context
	stop    context.CancelFunc

	// mu guards lives and closed; it is taken before a live session's
	// own lock, never after it.
	mu     sync.Mutex
	lives  map[string]*live
	closed bool
	// graphMu guards graphs (taken under a live session's lock).
	graphMu sync.Mutex
	graphs  map[string]*story.Story // each story loaded once for its graph
}

// New builds a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Sessions == nil {
		return nil, errors.New("web: Config.Sessions is required")
	}
	if !validToken(cfg.Token) {
		return nil, errors.New("web: Config.Token must be at least 32 hex digits (web.NewToken)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxLive <= 0 {
		cfg.MaxLive = 64
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 25 * time.Second
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{cfg: cfg, stories: loadStories(cfg.Stories), guard: newGuard(cfg.Token), ctx: ctx, stop: stop,
		lives: map[string]*live{}, graphs: map[string]*story.Story{}}, nil
}

// Handler is the server's routes behind its guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /s/{id}", s.page)
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetServer(static)))
	mux.HandleFunc("GET /api/stories", s.listStories)
	mux.HandleFunc("POST /api/sessions", s.createSession)
	mux.HandleFunc("GET /api/sessions/{id}/events", s.events)
	mux.HandleFunc("POST /api/sessions/{id}/input", s.input)
	mux.HandleFunc("POST /api/sessions/{id}/cancel", s.cancel)
	mux.HandleFunc("POST /api/sessions/{id}/fork", s.fork)
	mux.HandleFunc("DELETE /api/sessions/{id}", s.deleteSession)
	mux.HandleFunc("POST /api/sessions/{id}/world", s.world)
	mux.HandleFunc("GET /api/sessions/{id}/diagram.svg", s.diagram)
	mux.HandleFunc("GET /api/sessions/{id}/media/{n}", s.media)
	mux.HandleFunc("GET /s/{id}/trace/", s.tracePage)
	mux.HandleFunc("GET /evals/{story}/{name}", s.evalPage)
	return s.guard.wrap(mux)
}

// URL is the address to open: the server's root with the token.
func (s *Server) URL(addr net.Addr) string {
	return "http://" + addr.String() + "/?token=" + s.cfg.Token
}

// Serve serves on ln until ctx ends, then shuts down and closes every
// session it holds (saved, its writer lock released).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return s.ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		s.stop() // ends the event streams and the turns in flight
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
			err = errors.Join(err, e)
		}
	}
	return errors.Join(err, s.Close())
}

// Close closes every live session (a turn in flight is cancelled first)
// and the stories loaded for graphs.
func (s *Server) Close() error {
	s.stop()
	s.mu.Lock()
	s.closed = true
	lives := make([]*live, 0, len(s.lives))
	for _, l := range s.lives {
		lives = append(lives, l)
	}
	s.lives = map[string]*live{}
	s.mu.Unlock()
	s.graphMu.Lock()
	graphs := s.graphs
	s.graphs = nil // none is loaded any more
	s.graphMu.Unlock()
	var errs []error
	for _, l := range lives {
		errs = append(errs, l.close())
	}
	for _, st := range graphs {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// storyByKey is the story served under key, nil when none is.
func (s *Server) storyByKey(key string) *storyInfo {
	for _, si := range s.stories {
		if si.Key == key {
			return si
		}
	}
	return nil
}

// storyByFile is the story whose root file is file, nil when it is not
// served.
func (s *Server) storyByFile(file string) *storyInfo {
	for _, si := range s.stories {
		if si.File == file {
			return si
		}
	}
	return nil
}

// storyOf is si's story as loaded for its graph (no handler, no secret),
// loaded once; nil when it does not load.
func (s *Server) storyOf(si *storyInfo) *story.Story {
	s.graphMu.Lock()
	defer s.graphMu.Unlock()
	if st, ok := s.graphs[si.Key]; ok || s.graphs == nil {
		return st
	}
	st, err := story.Load(si.File, story.WithStubbedHosts(), story.WithoutSecrets())
	if err != nil {
		st = nil
	}
	s.graphs[si.Key] = st
	return st
}

// graphOf is a new graph of si's story, nil when it does not load.
func (s *Server) graphOf(si *storyInfo) *viz.Graph {
	st := s.storyOf(si)
	if st == nil {
		return nil
	}
	return viz.FromStory(st)
}

// lookup is the live session id names, opened when the server does not
// hold it yet.
func (s *Server) lookup(id string) (*live, error) {
	if err := session.CheckID(id); err != nil {
		return nil, &notFoundError{err.Error()}
	}
	s.mu.Lock()
	if l, ok := s.lives[id]; ok {
		s.mu.Unlock()
		return l, nil
	}
	s.mu.Unlock()
	m, err := s.meta(id)
	if err != nil {
		return nil, err
	}
	si := s.storyByFile(m.Story)
	if si == nil {
		return nil, &notFoundError{fmt.Sprintf("session %s runs %s, which this server does not serve (give its directory to kitsoki web)", id, m.Story)}
	}
	s.mu.Lock()
	if l, ok := s.lives[id]; ok { // opened meanwhile
		s.mu.Unlock()
		return l, nil
	}
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the server is shutting down")
	}
	l := newLive(s, id, si)
	l.meta = m
	s.lives[id] = l
	s.mu.Unlock()
	s.evict(l)
	l.begin(busyOpening, func(ctx context.Context) (*driver.Open, error) {
		if m.Finished {
			return nil, driver.ErrFinished
		}
		o, _, err := s.cfg.Sessions.Resume(ctx, driver.ResumeRequest{Ref: id, OnDispatch: l.onDispatch})
		return o, err
	})
	return l, nil
}

// release closes the live session id, if the server holds it; a session
// taking a turn (or being opened) is refused.
func (s *Server) release(id string) error {
	s.mu.Lock()
	l, ok := s.lives[id]
	if ok && l.running() {
		s.mu.Unlock()
		return &conflictError{"a turn is in progress: delete the session once it ends (or cancel it)"}
	}
	delete(s.lives, id)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return l.close()
}

// meta is session id's index entry.
func (s *Server) meta(id string) (session.Meta, error) {
	m, err := s.cfg.Sessions.Store.Get(id)
	if errors.Is(err, session.ErrNotFound) {
		return m, &notFoundError{err.Error()}
	}
	return m, err
}

type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// forget drops a live session that could not be opened.
func (s *Server) forget(l *live) {
	s.mu.Lock()
	if s.lives[l.id] == l {
		delete(s.lives, l.id)
	}
	s.mu.Unlock()
}

// evict closes the least recently used live sessions no page follows
// while the server holds more than MaxLive; keep is never closed.
func (s *Server) evict(keep *live) {
	s.mu.Lock()
	if len(s.lives) <= s.cfg.MaxLive {
		s.mu.Unlock()
		return
	}
	var idle []*live
	for _, l := range s.lives {
		if l != keep && l.idle() {
			idle = append(idle, l)
		}
	}
	slices.SortFunc(idle, func(a, b *live) int { return a.lastUsed().Compare(b.lastUsed()) })
	var gone []*live
	for _, l := range idle {
		if len(s.lives) <= s.cfg.MaxLive {
			break
		}
		delete(s.lives, l.id)
		gone = append(gone, l)
	}
	s.mu.Unlock()
	for _, l := range gone {
		if err := l.close(); err != nil {
			s.cfg.Logger.Warn("web: closing an idle session", "session", l.id, "err", err)
		}
	}
}

func (l *live) lastUsed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}

// NewSessionID is a new session's id: the time and four random bytes.
func NewSessionID() string {
	return time.Now().UTC().Format("20060102T150405Z") + "-" + NewToken()[:8]
}

// assetServer serves the embedded assets, never cached across versions
// of the binary (no-cache: revalidated by modification time).
func assetServer(fsys fs.FS) http.Handler {
	h := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}
