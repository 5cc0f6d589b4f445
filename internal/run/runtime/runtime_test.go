package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const hello = "../../../stories/hello/app.yaml"

func loadHello(t *testing.T) *story.Story {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// scripted answers every call with the same greeting, and records what it
// saw and whether it was closed.
type scripted struct {
	calls  int
	run    *agent.Run
	closed bool
}

func (s *scripted) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	s.calls++
	s.run = call.Run
	return &agent.AskResponse{Submission: json.RawMessage(`{"text":"Hi Ada","tone":"casual","done":true}`)}, nil
}

func (s *scripted) Close() error { s.closed = true; return nil }

// greet runs the hello story's root and one greet turn.
func greet(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	sess := rt.Session()
	if _, err := sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := sess.Turn(context.Background(), "greet", map[string]any{"name": "Ada"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.HostErrors) > 0 || out.Err != nil {
		t.Fatalf("greet: host errors %v, error %v", out.HostErrors, out.Err)
	}
}

// TestTraceSinks checks that Config.Trace selects the sink: memory by
// default, a new file, or the caller's sink; and the refusals.
func TestTraceSinks(t *testing.T) {
	dir := t.TempDir()
	used := filepath.Join(dir, "used.jsonl")
	if err := os.WriteFile(used, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := trace.NewMemSink()
	for _, tc := range []struct {
		name    string
		trace   runtime.Trace
		wantErr string
		check   func(t *testing.T, rt *runtime.Runtime)
	}{
		{name: "memory by default", check: func(t *testing.T, rt *runtime.Runtime) {
			if rt.Memory() == nil || rt.Sink() != rt.Memory() {
				t.Fatalf("Memory() = %v, Sink() = %v: want the memory sink", rt.Memory(), rt.Sink())
			}
			if !strings.Contains(string(rt.Memory().Bytes()), `"kind":"agent.call.start"`) {
				t.Errorf("the memory trace has no agent call:\n%s", rt.Memory().Bytes())
			}
		}},
		{name: "file", trace: runtime.Trace{Path: filepath.Join(dir, "new.jsonl")}, check: func(t *testing.T, rt *runtime.Runtime) {
			if rt.Memory() != nil {
				t.Error("a file run has a memory trace")
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "new.jsonl"))
			if err != nil || !strings.Contains(string(b), `"kind":"agent.call.start"`) {
				t.Errorf("trace file: %v\n%s", err, b)
			}
		}},
		{name: "file, fsync per event", trace: runtime.Trace{Path: filepath.Join(dir, "sync.jsonl"), SyncPerEvent: true}},
		{name: "caller's sink", trace: runtime.Trace{Sink: own}, check: func(t *testing.T, rt *runtime.Runtime) {
			if rt.Sink() != own || rt.Memory() != nil {
				t.Errorf("Sink() = %v, Memory() = %v: want the caller's sink only", rt.Sink(), rt.Memory())
			}
			if !strings.Contains(string(own.Bytes()), `"kind":"agent.call.start"`) {
				t.Error("the caller's sink got no agent call")
			}
		}},
		{name: "a trace that holds a session", trace: runtime.Trace{Path: used},
			wantErr: "trace " + used + " already holds a session; pass another --trace path (or remove the file)"},
		{name: "path and sink", trace: runtime.Trace{Path: filepath.Join(dir, "x.jsonl"), Sink: own},
			wantErr: "runtime: Trace.Path and Trace.Sink are exclusive: give one"},
		{name: "fsync without a file", trace: runtime.Trace{SyncPerEvent: true},
			wantErr: "runtime: Trace.SyncPerEvent applies to a trace file: give Trace.Path too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := loadHello(t)
			a := &scripted{}
			rt, err := runtime.Open(st, runtime.Config{Trace: tc.trace, Session: &runtime.Session{ID: "s"},
				Agents: runtime.Agents{Override: map[string]agent.Agent{"agent.demo": a}}})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Open: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			greet(t, rt)
			if a.calls != 1 {
				t.Errorf("the agent answered %d calls, want 1", a.calls)
			}
			if tc.check != nil {
				tc.check(t, rt)
			}
		})
	}
}

// TestClock checks that Config.Clock is the run's time: trace times come
// from it.
func TestClock(t *testing.T) {
	st := loadHello(t)
	epoch := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	rt, err := runtime.Open(st, runtime.Config{Clock: clock.NewFake(epoch), Session: &runtime.Session{ID: "s"},
		Agents: runtime.Agents{Override: map[string]agent.Agent{"agent.demo": &scripted{}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	greet(t, rt)
	evs, err := trace.Read(strings.NewReader(string(rt.Memory().Bytes())))
	if err != nil || len(evs) == 0 {
		t.Fatalf("trace: %d events, %v", len(evs), err)
	}
	for _, ev := range evs {
		if ts, err := time.Parse(time.RFC3339Nano, ev.TS); err != nil || !ts.Equal(epoch) {
			t.Fatalf("event %d (%s) at %q, want the fake clock's %v", ev.Seq, ev.Kind, ev.TS, epoch)
		}
	}
}

// TestCassetteReplay checks that Config.Cassette answers the story's
// agents from the cassette, as kitsoki run --cassette does.
func TestCassetteReplay(t *testing.T) {
	st := loadHello(t)
	c, err := replay.Load("../../../stories/hello/cassettes/demo.yaml", cassette.WithSecrets(st.Secrets))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Cassette: c, Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sess := rt.Session()
	if _, err := sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := sess.Turn(context.Background(), "greet", map[string]any{"name": "Ada", "style": "formal"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sess.World()["greeting"], any(map[string]any{"done": true, "text": "Good day, Ada. It is a pleasure to make your acquaintance.", "tone": "formal"}); !cmp.Equal(got, want) {
		t.Errorf("greeting (-want +got):\n%s", cmp.Diff(want, got))
	}
	if out.State != "greeted" || len(c.TakeMisses()) != 0 {
		t.Errorf("state %q, misses %v", out.State, c.TakeMisses())
	}
	if !strings.Contains(string(rt.Memory().Bytes()), `"episode_id":"recorded_agent.demo_greeting"`) {
		t.Error("the trace does not name the cassette episode that answered")
	}
}

// TestPins checks that the story's selection: pins are resolved for every
// run, reported through PinWarning (or refused with StrictPins, before any
// trace file exists), and that Config.Routes replaces them.
func TestPins(t *testing.T) {
	const warning = `pin for call "verdict" not applied: evidence evals/reports/verdict/latest.json is missing (run kitsoki eval run --live to produce it); using the default route (agent.demo)`
	for _, tc := range []struct {
		name         string
		strict       bool
		routes       map[*story.Invoke]*host.Route
		ignore       bool
		wantErr      string
		wantWarnings []string
	}{
		{name: "warned", wantWarnings: []string{warning}},
		{name: "strict refuses", strict: true, wantErr: "pins not honoured (--strict-pins):\n  " + warning},
		{name: "routes replace the pins", routes: map[*story.Invoke]*host.Route{}, strict: true},
		{name: "ignored", ignore: true, strict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := story.Load(filepath.Join("testdata", "pinned", "app.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			path := filepath.Join(t.TempDir(), "t.jsonl")
			var warned []string
			rt, err := runtime.Open(st, runtime.Config{StrictPins: tc.strict, Routes: tc.routes, IgnorePins: tc.ignore,
				PinWarning: func(w string) { warned = append(warned, w) },
				Trace:      runtime.Trace{Path: path}, Session: &runtime.Session{ID: "s"}})
			if tc.wantErr != "" {
				var pe *runtime.PinsError
				if !errors.As(err, &pe) || err.Error() != tc.wantErr {
					t.Fatalf("Open: %v, want a *PinsError %q", err, tc.wantErr)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused run left a trace file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if diff := cmp.Diff(tc.wantWarnings, warned); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, rt.PinWarnings()); diff != "" {
				t.Errorf("PinWarnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCloseReleasesAgents checks that Close closes the agents of the
// runtime's own registry, and leaves a shared registry's to its owner.
func TestCloseReleasesAgents(t *testing.T) {
	for _, tc := range []struct {
		name       string
		shared     bool
		wantClosed bool
	}{
		{name: "own registry", wantClosed: true},
		{name: "shared registry", shared: true, wantClosed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := loadHello(t)
			a := &scripted{}
			agents := runtime.Agents{Override: map[string]agent.Agent{"agent.demo": a}}
			if tc.shared {
				reg := agent.NewRegistry(nil)
				reg.Configure(st.Plugins)
				defer reg.Close()
				agents.Registry = reg
			}
			rt, err := runtime.Open(st, runtime.Config{Agents: agents, Session: &runtime.Session{ID: "s"},
				Trace: runtime.Trace{Path: filepath.Join(t.TempDir(), "t.jsonl")}})
			if err != nil {
				t.Fatal(err)
			}
			greet(t, rt)
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if a.closed != tc.wantClosed {
				t.Errorf("agent closed = %v, want %v", a.closed, tc.wantClosed)
			}
		})
	}
}

// TestRunEnvironment checks what a session hands each agent call: its
// live actions and title ownership, with the run's tool facts.
func TestRunEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name      string
		title     string
		wantOwned bool
	}{
		{name: "untitled", wantOwned: true},
		{name: "titled by whoever started it", title: "Greeting round", wantOwned: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := loadHello(t)
			a := &scripted{}
			rt, err := runtime.Open(st, runtime.Config{
				Agents:  runtime.Agents{Override: map[string]agent.Agent{"agent.demo": a}},
				Session: &runtime.Session{ID: "run-7", Title: tc.title},
				Tools:   runtime.Tools{Autopilot: true, Providers: []string{toolserver.StoryFilesProvider}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			greet(t, rt)
			cc := a.run
			if cc == nil || cc.Live == nil {
				t.Fatalf("call context = %+v: want the session's live actions", cc)
			}
			if cc.ID != "run-7" || cc.WorkspaceID != "hello" || cc.StoryDir != st.Dir || !cc.Autopilot ||
				cc.TitleOwned != tc.wantOwned || !cmp.Equal(cc.ToolProviders, []string{toolserver.StoryFilesProvider}) {
				t.Errorf("call context = %+v", cc)
			}
			if w := cc.Live.World(); w["name"] != "Ada" {
				t.Errorf("live world = %v: want the world at dispatch", w)
			}
		})
	}
}

// TestNoSession checks a runtime without a session: a host dispatched to
// directly (an eval candidate), whose calls carry no run environment.
func TestNoSession(t *testing.T) {
	st := loadHello(t)
	a := &scripted{}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Override: map[string]agent.Agent{"agent.demo": a}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Session() != nil {
		t.Fatal("a runtime without Config.Session has a session")
	}
	inv := st.States["greeting"].OnEnter[0].Invoke
	res, err := rt.Host().Dispatch(context.Background(), &host.Call{Namespace: inv.Name, Invoke: inv, Turn: 1, State: "greeting",
		Args: map[string]any{"agent": "greeter", "prompt": "prompts/greet.md", "schema": "schemas/greeting.json", "args": map[string]any{"name": "Ada", "style": "casual"}}})
	if err != nil || res.Err != nil {
		t.Fatalf("Dispatch: %v, %v", err, res.Err)
	}
	if a.calls != 1 || a.run != nil {
		t.Errorf("calls %d, call context %+v: want one call with no run attached", a.calls, a.run)
	}
}

// TestUnknownToolProvider checks the refusal of a tool provider kitsoki
// does not have.
func TestUnknownToolProvider(t *testing.T) {
	st := loadHello(t)
	_, err := runtime.Open(st, runtime.Config{Tools: runtime.Tools{Providers: []string{"nope"}}})
	want := `tool provider "nope": unknown tool provider (known: story-files)`
	if err == nil || err.Error() != want {
		t.Fatalf("Open: %v, want %q", err, want)
	}
}

// TestOverridesWinOverCassette checks that Agents.Override and Handlers
// answer in place of a cassette's agents and hosts (kitsoki's WithAgent
// and WithHandler with WithCassette), and that the cassette answers what
// they leave.
func TestOverridesWinOverCassette(t *testing.T) {
	for _, tc := range []struct {
		name              string
		override, handler bool
		wantDone          any
		wantRecept        string
		wantUnplayed      []string
	}{
		{name: "cassette", wantDone: false, wantRecept: "R-cassette"},
		{name: "agent", override: true, wantDone: true, wantRecept: "R-cassette", wantUnplayed: []string{"recorded_verdict"}},
		{name: "handler", handler: true, wantDone: false, wantRecept: "R-go", wantUnplayed: []string{"charge_ok"}},
		{name: "both", override: true, handler: true, wantDone: true, wantRecept: "R-go", wantUnplayed: []string{"recorded_verdict", "charge_ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := story.Load(filepath.Join("testdata", "handled", "app.yaml"), story.WithProvidedHandlers("host.pay.charge")) // Config.Handlers answers it
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			c, err := replay.Load(filepath.Join("testdata", "handled", "cassette.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := runtime.Config{Cassette: c, Session: &runtime.Session{ID: "s"}}
			a := &scripted{}
			if tc.override {
				cfg.Agents.Override = map[string]agent.Agent{"agent.demo": agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
					a.calls++
					return &agent.AskResponse{Submission: json.RawMessage(`{"done":true}`)}, nil
				})}
			}
			charged := 0
			if tc.handler {
				cfg.Handlers = map[string]host.Handler{"host.pay.charge": host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
					charged++
					return &host.Result{Data: map[string]any{"receipt": "R-go"}}, nil
				})}
			}
			rt, err := runtime.Open(st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			sess := rt.Session()
			if _, err := sess.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			out, err := sess.Turn(context.Background(), "check", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(out.HostErrors) > 0 || out.Err != nil {
				t.Fatalf("check: host errors %v, error %v", out.HostErrors, out.Err)
			}
			w := sess.World()
			if got := w["verdict"].(map[string]any)["done"]; got != tc.wantDone {
				t.Errorf("verdict.done = %v, want %v", got, tc.wantDone)
			}
			if got := w["receipt"]; got != tc.wantRecept {
				t.Errorf("receipt = %v, want %v", got, tc.wantRecept)
			}
			if tc.override != (a.calls == 1) || tc.handler != (charged == 1) {
				t.Errorf("Go agent called %d times, Go handler %d times", a.calls, charged)
			}
			if got := c.Remaining(); !cmp.Equal(got, tc.wantUnplayed) {
				t.Errorf("unplayed episodes %v, want %v", got, tc.wantUnplayed)
			}
			if m := c.TakeMisses(); len(m) != 0 {
				t.Errorf("misses %v", m)
			}
		})
	}
}
