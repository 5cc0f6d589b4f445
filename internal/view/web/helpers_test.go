package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/starlark"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

// The stories the tests play.
var (
	helloApp      = mustAbs("../../../stories/hello/app.yaml")
	helloCassette = mustAbs("../../../stories/hello/cassettes/demo.yaml")
	kindsApp      = mustAbs("testdata/kinds/app.yaml")
	kindsCassette = mustAbs("testdata/kinds/cassettes/answers.yaml")
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// serverOpts set up a test server.
type serverOpts struct {
	stories   []string
	cassettes map[string]string // story file → host cassette
	http      map[string]string // story file → HTTP cassette
	dir       string            // the sessions directory ("" a new one)
	token     string            // "" a new one
	addr      string            // "" a free loopback port
	debug     bool
	render    viz.RenderFunc
	turnDone  func(id string)
}

// testServer is a Server on a loopback listener of its own (so that a
// test can stop it and start another on the same address).
type testServer struct {
	*Server
	URL, Token, Dir string
	ln              net.Listener
	http            *http.Server
	done            chan error
	once            sync.Once
}

// startServer starts a server as kitsoki web wires one: durable sessions
// in a sessions directory, each session its own copy of its story's
// cassettes.
func startServer(t testing.TB, o serverOpts) *testServer {
	t.Helper()
	if o.dir == "" {
		o.dir = filepath.Join(t.TempDir(), "sessions")
	}
	if o.token == "" {
		o.token = NewToken()
	}
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	local := &driver.Sessions{Store: session.Store{Dir: o.dir},
		Load: func(path string) (*story.Story, error) {
			var opts []story.Option
			if c := o.cassettes[path]; c != "" {
				opts = append(opts, story.WithReplayedHandlers(replay.HandlerNames(c)...))
			}
			return story.Load(path, opts...)
		},
		Config: func(st *story.Story) (runtime.Config, func() error, error) {
			cfg := runtime.Config{Agents: runtime.Agents{Live: true}, Tools: runtime.Tools{Autopilot: true}}
			if p := o.cassettes[st.File]; p != "" {
				c, err := replay.Load(p, cassette.WithSecrets(st.Secrets))
				if err != nil {
					return cfg, nil, err
				}
				cfg.Cassette = c
			}
			if p := o.http[st.File]; p != "" {
				c, err := starlark.LoadCassette(p, starlark.ModeNone)
				if err != nil {
					return cfg, nil, err
				}
				cfg.Starlark.HTTP = c.Client(nil)
			}
			return cfg, nil, nil
		}}
	srv, err := New(Config{Stories: o.stories, Sessions: local, Token: o.token, Debug: o.debug, Render: o.render, TurnDone: o.turnDone})
	if err != nil {
		t.Fatal(err)
	}
	// A stopped test server's listener is closed before stop returns, and
	// Go listens with SO_REUSEADDR: its address can be taken again at once.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: srv, URL: "http://" + ln.Addr().String(), Token: o.token, Dir: o.dir, ln: ln,
		http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return srv.ctx }},
		done: make(chan error, 1)}
	go func() { ts.done <- ts.http.Serve(ln) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop closes the server and every session it holds.
func (ts *testServer) stop(t testing.TB) {
	ts.once.Do(func() {
		ts.Server.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.http.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := ts.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// do sends a request with the token header and decodes a JSON answer.
func (ts *testServer) do(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(TokenHeader, ts.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// create starts a session of the story under key and returns its id.
func (ts *testServer) create(t testing.TB, key string) string {
	t.Helper()
	code, out := ts.do(t, "POST", "/api/sessions", map[string]any{"story": key})
	if code != http.StatusCreated {
		t.Fatalf("create %s: %d %v", key, code, out)
	}
	return out["id"].(string)
}

// event is one server-sent event.
type event struct {
	Name, ID string
	Data     []byte
}

// stream reads a session's event stream.
type stream struct {
	t    testing.TB
	resp *http.Response
	rd   *bufio.Reader
	// Raw holds every byte read, for the hostile-content checks.
	Raw strings.Builder
	// The latest of each.
	Status  map[string]any
	Calls   map[string]any
	Entries []Entry
	LastID  string
}

// follow opens a session's event stream (lastID: the Last-Event-ID).
func (ts *testServer) follow(t testing.TB, id, lastID string) *stream {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/api/sessions/"+id+"/events", nil)
	req.Header.Set(TokenHeader, ts.Token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("events of %s: %d %s", id, resp.StatusCode, b)
	}
	s := &stream{t: t, resp: resp, rd: bufio.NewReader(resp.Body)}
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next reads the next event.
func (s *stream) next() (event, error) {
	var ev event
	for {
		line, err := s.rd.ReadString('\n')
		s.Raw.WriteString(line)
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.Name != "" {
				s.apply(ev)
				return ev, nil
			}
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			ev.Data = []byte(line[len("data: "):])
		}
	}
}

func (s *stream) apply(ev event) {
	switch ev.Name {
	case "status":
		s.Status = map[string]any{}
		if err := json.Unmarshal(ev.Data, &s.Status); err != nil {
			s.t.Fatalf("status: %v: %s", err, ev.Data)
		}
	case "calls":
		s.Calls = map[string]any{}
		if err := json.Unmarshal(ev.Data, &s.Calls); err != nil {
			s.t.Fatalf("calls: %v: %s", err, ev.Data)
		}
	case "entries":
		var m struct {
			From    int
			Reset   bool
			Entries []Entry
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			s.t.Fatalf("entries: %v: %s", err, ev.Data)
		}
		if m.Reset {
			s.Entries = nil
		}
		s.Entries = append(s.Entries[:min(m.From, len(s.Entries))], m.Entries...)
		s.LastID = ev.ID
	}
}

// until reads events until ok holds for the stream; it has no deadline
// of its own (go test -timeout bounds it).
func (s *stream) until(what string, ok func(s *stream) bool) {
	s.t.Helper()
	for !ok(s) {
		if os.Getenv("WEB_TEST_DEBUG") != "" {
			s.t.Logf("waiting for %s: entries %+v calls %v state %v", what, s.Entries, s.Calls, s.Status["state"])
		}
		if _, err := s.next(); err != nil {
			s.t.Fatalf("waiting for %s: %v (status %v)", what, err, s.Status)
		}
	}
}

// settled: the session is open, no turn runs, and it is in state.
func settled(state string) func(s *stream) bool {
	return func(s *stream) bool {
		return s.Status != nil && s.Calls != nil && s.Calls["busy"] == nil && s.Status["state"] == state
	}
}

// texts are the stream's entries of a kind, in order.
func (s *stream) texts(kind string) []string {
	var out []string
	for _, e := range s.Entries {
		if e.Kind == kind {
			out = append(out, e.Text)
		}
	}
	return out
}

// slowCassette is the demo cassette with a third greeting that takes an
// hour (a call to cancel).
func slowCassette(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(helloCassette)
	if err != nil {
		t.Fatal(err)
	}
	slow := `  - id: slow_greeting
    match:
      handler: agent.demo
      phase: greeting
    delay: 1h
    agent:
      verb: decide
      agent: greeter
      model: scripted-demo
      response: '{"done":true,"text":"Too late.","tone":"casual"}'
`
	p := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(p, append(b, slow...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
