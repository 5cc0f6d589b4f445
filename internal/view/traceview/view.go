package traceview

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/bidi"
	"github.com/kitsoki/kitsoki/internal/base/loopback"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

//go:embed page/trace.html
var pageHTML string

// HTML writes the run as one self-contained page: its CSS, script and
// data inline, nothing fetched (a Content-Security-Policy forbids it), so
// it works offline and as a CI artifact. With live set the page polls
// run.json beside it (Server) until the run is complete.
func HTML(w io.Writer, r *Run, live bool) error {
	data, err := json.Marshal(r) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("traceview: encoding the run: %w", err)
	}
	// Bidi overrides and isolates in the data are shown as marks.
	page := strings.Replace(pageHTML, "/*RUN*/", bidi.Reveal(string(data)), 1)
	if live {
		page = strings.Replace(page, "/*LIVE*/false", "true", 1)
	}
	_, err = io.WriteString(w, page)
	return err
}

// Server serves a trace's page and its run.json, read afresh on every
// request, so an open page follows a run that is still appending.
type Server struct {
	Path string
	// Writing says whether a run still holds the trace (nil: trace.WriterActive).
	Writing func(path string) bool
	Log     *slog.Logger
}

func (s *Server) load() (*Run, error) {
	writing := s.Writing
	if writing == nil {
		writing = trace.WriterActive
	}
	active := writing(s.Path)
	r, err := Load(s.Path)
	if err != nil {
		return nil, err
	}
	r.Complete = !active
	return r, nil
}

// Handler is GET / (the page, live) and GET /run.json (the run). A
// request that came over loopback but names another host or comes from
// another site's page (DNS rebinding) is refused 403 (loopback.Guard).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		r, err := s.load()
		if err != nil {
			s.fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = HTML(w, r, true)
	})
	mux.HandleFunc("GET /run.json", func(w http.ResponseWriter, req *http.Request) {
		r, err := s.load()
		if err != nil {
			s.fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		b, err := json.Marshal(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		_, _ = io.WriteString(w, bidi.Reveal(string(b))+"\n") // the page's feed: marks, as in the page
	})
	return loopback.Guard(mux)
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	if s.Log != nil {
		s.Log.Warn("trace view: reading the trace", "path", s.Path, "err", err)
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// Serve serves on ln until ctx ends, then shuts down (in-flight requests
// get up to a second).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return err
}
