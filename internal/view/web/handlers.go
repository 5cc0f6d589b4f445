package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/bidi"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/view/evalview"
	"github.com/kitsoki/kitsoki/internal/view/traceview"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

// pageCSP is the session and home page's policy: its own script and
// style only, no inline script, requests to itself only, framed by
// nobody.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxBody bounds a request body.
const maxBody = 1 << 20

// page serves the one page (home and session alike: its script reads the
// path), the token in a <meta> for the requests it makes.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = bytes.Replace(b, []byte("{{TOKEN}}"), []byte(s.cfg.Token), 1) // hex only
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(b)
}

// writeJSON answers v as JSON, bidi controls shown as marks.
func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, bidi.Reveal(string(marshal(v)))+"\n")
}

// fail answers err with the status its kind calls for.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var nf *notFoundError
	var ce *conflictError
	var ie *InputError
	switch {
	case errors.As(err, &nf):
		code = http.StatusNotFound
	case errors.As(err, &ce):
		code = http.StatusConflict
	case errors.As(err, &ie):
		code = http.StatusBadRequest
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

// readBody decodes a JSON request body (numbers as int64 or float64).
func readBody(r *http.Request) (map[string]any, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return nil, &InputError{fmt.Errorf("reading the request: %w", err)}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, &InputError{fmt.Errorf("the request is not JSON: %w", err)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &InputError{errors.New("the request is not a JSON object")}
	}
	return m, nil
}

// sessionRow is a session as the home page lists it.
type sessionRow struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Turn       int64     `json:"turn"`
	Updated    time.Time `json:"updated"`
	Finished   bool      `json:"finished"`
	Exit       string    `json:"exit,omitempty"`
	ForkedFrom string    `json:"forked_from,omitempty"`
	Live       bool      `json:"live"`
}

// listStories is the home page's data: each story and its sessions.
func (s *Server) listStories(w http.ResponseWriter, r *http.Request) {
	all, err := s.cfg.Sessions.List()
	if err != nil {
		fail(w, err)
		return
	}
	type card struct {
		*storyInfo
		Sessions []sessionRow `json:"sessions"`
	}
	cards := make([]card, len(s.stories))
	for i, si := range s.stories {
		cards[i] = card{storyInfo: si, Sessions: []sessionRow{}}
	}
	s.mu.Lock()
	for _, m := range all {
		for i := range cards {
			if cards[i].File == m.Story {
				row := sessionRow{ID: m.ID, State: m.State, Turn: m.Turn, Updated: m.Updated,
					Finished: m.Finished, Exit: m.Exit, ForkedFrom: m.ForkedFrom}
				if l := s.lives[m.ID]; l != nil {
					l.now(&row) // the index entry is saved at most once a second
				}
				cards[i].Sessions = append(cards[i].Sessions, row)
			}
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"stories": cards, "debug": s.cfg.Debug})
}

// createSession starts a session of a story; turn 0 runs while the page
// opens.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	key, _ := body["story"].(string)
	si := s.storyByKey(key)
	if si == nil {
		fail(w, &notFoundError{fmt.Sprintf("no story %q is served here", key)})
		return
	}
	if si.Error != "" {
		fail(w, &conflictError{"the story does not load: " + si.Error})
		return
	}
	id := NewSessionID()
	l := newLive(s, id, si)
	l.meta.Trace = ""
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		fail(w, errors.New("the server is shutting down"))
		return
	}
	s.lives[id] = l
	s.mu.Unlock()
	s.evict(l)
	l.begin(busyStarting, func(ctx context.Context) (*driver.Open, error) {
		o, _, err := s.cfg.Sessions.Create(ctx, driver.CreateRequest{Story: si.File, ID: id, OnDispatch: l.onDispatch})
		return o, err
	})
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// events is a session's event stream: the catch-up, then each update,
// until the page goes (or falls behind and must reconnect).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	sub, first := l.subscribe(r.Header.Get("Last-Event-ID"))
	defer l.unsubscribe(sub)
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(append([]byte("retry: 1000\n\n"), first...)) {
		return
	}
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case f := <-sub.ch:
			if !send(f) {
				return
			}
		case <-tick.C:
			if !send([]byte(": ping\n\n")) {
				return
			}
		case <-sub.dead:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// input takes one input: {"text": line} as the terminal reads a line, or
// {"intent": name, "slots": {...}} (string values typed by the slot's
// declaration).
func (s *Server) input(w http.ResponseWriter, r *http.Request) {
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	in, err := l.inputOf(body)
	if err != nil {
		fail(w, err)
		return
	}
	if err := l.take(in); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

// inputOf reads an input request.
func (l *live) inputOf(body map[string]any) (driver.Input, error) {
	if text, ok := body["text"].(string); ok {
		text = strings.TrimSpace(text)
		switch {
		case text == "":
			return driver.Input{}, &InputError{errors.New("type an intent (greet name=Ada) or a sentence")}
		case strings.HasPrefix(text, ":"):
			return driver.Input{}, &InputError{fmt.Errorf("%s: the page has no : commands (the buttons and panes do what :intents, :world and :back do in the terminal)", text)}
		}
		return driver.Raw(text), nil
	}
	name, _ := body["intent"].(string)
	if name == "" {
		return driver.Input{}, &InputError{errors.New(`want {"text": "..."} or {"intent": "...", "slots": {...}}`)}
	}
	raw, _ := body["slots"].(map[string]any)
	types := map[string]string{}
	l.mu.Lock()
	if l.last != nil {
		for _, in := range l.last.Intents {
			if in.Name == name {
				for _, sl := range in.Slots {
					types[sl.Name] = sl.Type
				}
			}
		}
	}
	l.mu.Unlock()
	return driver.Intent(name, typeSlots(types, raw)), nil
}

// typeSlots types slot values a form sent as text by the slot's declared
// type (types, by slot); an empty text is no value. Other values (a list
// of ticked items, a choice's bound slots) are taken as they are.
func typeSlots(types map[string]string, raw map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range raw {
		text, ok := v.(string)
		if !ok {
			out[k] = v
			continue
		}
		if text == "" {
			continue
		}
		out[k] = orchestrator.TypedValue(types[k], text)
	}
	return out
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	if err := l.stop(); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

// fork starts a new session from turn {"at": N} of this one (the last
// finished turn when at is not given).
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	l, err := s.lookup(id)
	if err != nil {
		fail(w, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	l.mu.Lock()
	busy, turn := l.busy, int64(-1)
	if l.last != nil {
		turn = l.last.Turn
	}
	l.mu.Unlock()
	if busy != "" {
		fail(w, &conflictError{"a turn is in progress: fork once it ends"})
		return
	}
	at := turn
	switch v := body["at"].(type) {
	case nil:
	case int64:
		at = v
	default:
		fail(w, &InputError{fmt.Errorf(`"at" is a turn number, not %v`, v)})
		return
	}
	m, err := s.cfg.Sessions.Fork(id, at)
	if err != nil {
		fail(w, &conflictError{err.Error()})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": m.ID, "at": at})
}

// deleteSession deletes a session and its journal: the server lets go of
// it first (refused while a turn runs); one another process holds is
// refused by the session API.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.meta(id); err != nil {
		fail(w, err)
		return
	}
	if err := s.release(id); err != nil {
		fail(w, err)
		return
	}
	m, kept, err := s.cfg.Sessions.Delete(id)
	if err != nil {
		fail(w, &conflictError{err.Error()})
		return
	}
	out := map[string]string{"id": m.ID}
	if kept != "" {
		out["kept"] = kept
	}
	writeJSON(w, http.StatusOK, out)
}

// world queues world edits for the next turn: {"key": k, "value": v}
// (debug mode).
func (s *Server) world(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Debug {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "the world is edited in debug mode: start kitsoki web with --debug"})
		return
	}
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	key, _ := body["key"].(string)
	st := s.storyOf(l.story)
	if st == nil || !declared(st, key) {
		fail(w, &InputError{fmt.Errorf("world key %q is not declared under world: in %s", key, l.story.File)})
		return
	}
	if err := l.setWorld(map[string]any{key: body["value"]}); err != nil {
		var ce *conflictError
		if !errors.As(err, &ce) {
			err = &InputError{err}
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

func declared(st *story.Story, key string) bool {
	for _, v := range st.World {
		if v.Name == key {
			return true
		}
	}
	return false
}

// diagram is the state diagram as SVG, the current state and the path
// taken marked; rendered once per version. It is an image: an <img>
// never runs what an SVG holds, and its own policy forbids scripts.
func (s *Server) diagram(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Render == nil {
		http.Error(w, "no SVG renderer: kitsoki-graphviz was not found (make build puts it beside kitsoki)", http.StatusNotFound)
		return
	}
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	b, err := l.diagramSVG(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// diagramSVG renders the graph as it stands (cached until it changes).
func (l *live) diagramSVG(ctx context.Context) ([]byte, error) {
	l.svgMu.Lock()
	defer l.svgMu.Unlock()
	l.mu.Lock()
	g, v := l.graph, l.version
	var dot string
	if g != nil {
		dot = viz.DOT(g)
	}
	l.mu.Unlock()
	if g == nil {
		return nil, errors.New("the story's graph is not there (it does not load)")
	}
	if l.svg != nil && l.svgV == v {
		return l.svg, nil
	}
	b, err := l.srv.cfg.Render(ctx, dot, viz.FormatSVG)
	if err != nil {
		return nil, err
	}
	l.svg, l.svgV = b, v
	return b, nil
}

// tracePage is the trace pane: trace view's live page of the session's
// journal, under /s/{id}/trace/.
func (s *Server) tracePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	l, err := s.lookup(id)
	if err != nil {
		fail(w, err)
		return
	}
	l.mu.Lock()
	path := l.meta.Trace
	l.mu.Unlock()
	if path == "" {
		http.Error(w, "the session has no journal yet", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'self'")
	tv := &traceview.Server{Path: path, Log: s.cfg.Logger}
	http.StripPrefix("/s/"+id+"/trace", tv.Handler()).ServeHTTP(w, r)
}

// evalPage is a story's eval report page (the latest report of one of
// its datasets).
func (s *Server) evalPage(w http.ResponseWriter, r *http.Request) {
	si := s.storyByKey(r.PathValue("story"))
	if si == nil {
		http.NotFound(w, r)
		return
	}
	name := r.PathValue("name")
	var ev *evalInfo
	for i := range si.Evals {
		if si.Evals[i].Name == name {
			ev = &si.Evals[i]
		}
	}
	if ev == nil || ev.Report == "" {
		http.Error(w, fmt.Sprintf("story %s has no eval report %q", si.Key, name), http.StatusNotFound)
		return
	}
	rep, err := eval.ReadReport(ev.Report)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := evalview.HTML(&buf, rep); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}
