package kitsoki_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/plugin"
)

const (
	helloApp  = "stories/hello/app.yaml"
	demoTape  = "stories/hello/cassettes/demo.yaml"
	errorTape = "stories/hello/cassettes/agent_errors.yaml"
	deskApp   = "testdata/desk/app.yaml"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// deskTickets provides the desk story's host.tickets.create, which Open
// refuses to leave unprovided; a test that reaches the call passes its own
// WithHandler, which replaces this one.
var deskTickets = kitsoki.WithHandler("host.tickets.create", func(context.Context, kitsoki.Call) (map[string]any, error) {
	return nil, errors.New("the test did not expect host.tickets.create")
})

// open opens a session that the test closes, and starts it.
func open(t *testing.T, app string, opts ...kitsoki.Option) (*kitsoki.Session, *kitsoki.Outcome) {
	t.Helper()
	base := []kitsoki.Option{kitsoki.WithStartTime(epoch)}
	if app == deskApp {
		base = append(base, deskTickets)
	}
	s, err := kitsoki.Open(app, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	out, err := s.Start(t.Context())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s, out
}

func do(t *testing.T, s *kitsoki.Session, line string) *kitsoki.Outcome {
	t.Helper()
	out, err := s.Do(t.Context(), line)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return out
}

// The hello story replays from its recorded cassette: the views, the
// world and the trace are the recorded run's.
func TestReplayHello(t *testing.T) {
	s, start := open(t, helloApp, kitsoki.WithCassette(demoTape))
	if want := "Greeted so far: 0. Try: greet name=Ada style=formal"; start.View != want {
		t.Errorf("start view = %q, want %q", start.View, want)
	}
	out, err := s.Turn(t.Context(), "greet", map[string]any{"name": "Ada", "style": "formal"})
	if err != nil {
		t.Fatal(err)
	}
	want := &kitsoki.Outcome{From: "lobby", State: "greeted", View: "Ada was greeted (formal).",
		Says: []string{"Good day, Ada. It is a pleasure to make your acquaintance."}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("outcome (-want +got):\n%s", d)
	}
	greeting := map[string]any{"text": "Good day, Ada. It is a pleasure to make your acquaintance.", "tone": "formal", "done": true}
	if d := cmp.Diff(greeting, s.World()["greeting"]); d != "" {
		t.Errorf("world.greeting (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"again", "bye"}, s.Allowed()); d != "" {
		t.Errorf("allowed (-want +got):\n%s", d)
	}
	do(t, s, "again")
	if out := do(t, s, "greet name=Grace"); out.View != "Grace was greeted (casual)." {
		t.Errorf("view = %q", out.View)
	}
	out = do(t, s, "bye")
	if !out.Done || s.State() != "farewell" || out.View != "Bye! 2 greeting(s) today." {
		t.Errorf("after bye: done=%v state=%q view=%q", out.Done, s.State(), out.View)
	}
	if done, _ := s.Done(); !done {
		t.Error("Done() = false in farewell")
	}
	if v, err := s.View(); err != nil || v != out.View {
		t.Errorf("View() = %q, %v; want %q", v, err, out.View)
	}

	evs, err := s.Events()
	if err != nil {
		t.Fatal(err)
	}
	var episodes []string
	for _, ev := range evs {
		if ev.Kind == "agent.call.start" {
			episodes = append(episodes, ev.EpisodeID)
		}
	}
	if d := cmp.Diff([]string{"recorded_agent.demo_greeting", "recorded_agent.demo_greeting_2"}, episodes); d != "" {
		t.Errorf("agent.call.start episodes (-want +got):\n%s", d)
	}
}

// World returns a copy: writing to it does not reach the session.
func TestWorldIsACopy(t *testing.T) {
	s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape))
	do(t, s, "greet name=Ada style=formal")
	w := s.World()
	w["greetings"] = 99
	w["greeting"].(map[string]any)["text"] = "changed"
	got := s.World()
	if got["greetings"] != int64(1) {
		t.Errorf("greetings = %#v, want 1", got["greetings"])
	}
	if got["greeting"].(map[string]any)["text"] == "changed" {
		t.Error("a write to World()'s nested map reached the session")
	}
}

// A refused intent is a *Rejection whose text is the line `kitsoki run`
// prints; nothing changes.
func TestRejections(t *testing.T) {
	tests := []struct {
		line, code, text, hint string
	}{
		{"bye", kitsoki.CodeGuardFailed, `GUARD_FAILED: no transition matched for intent "bye" in state "lobby"`, "Greet somebody before you leave."},
		{"again", kitsoki.CodeIntentNotAllowed, `INTENT_NOT_ALLOWED_IN_STATE: intent "again" is not allowed in state "lobby" (allowed: bye, greet)`, ""},
		{"greet", kitsoki.CodeMissingSlots, `MISSING_SLOTS: intent "greet" is missing required slots: name`, ""},
		{"dance", kitsoki.CodeIntentNotAllowed, `INTENT_NOT_ALLOWED_IN_STATE: intent "dance" is not allowed in state "lobby": it is not a declared intent (allowed: bye, greet)`, ""},
		{"greet name=Bo style=shouty", kitsoki.CodeInvalidSlotValue, `INVALID_SLOT_VALUE: slot "style" of intent "greet": "shouty" is not one of casual, formal`, ""},
		{"greet name=Ada nick=x", kitsoki.CodeUnknownSlot, `UNKNOWN_SLOT: unknown slot "nick" for intent greet; did you mean "name"?`, ""},
	}
	s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape))
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			out, err := s.Do(t.Context(), tt.line)
			var rej *kitsoki.Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("error = %v, want a *Rejection", err)
			}
			if rej.Code != tt.code || err.Error() != tt.text || rej.GuardHint != tt.hint {
				t.Errorf("rejection = %q (code %s, hint %q), want %q (code %s, hint %q)", err, rej.Code, rej.GuardHint, tt.text, tt.code, tt.hint)
			}
			if out == nil || out.State != "lobby" {
				t.Errorf("outcome = %+v, want state lobby", out)
			}
		})
	}
	if w := s.World(); w["greetings"] != 0 { // the declared default, untouched
		t.Errorf("greetings = %#v after rejections, want 0", w["greetings"])
	}
}

// The desk story's agent and host handler are Go funcs.
func TestInProcessAgentAndHandler(t *testing.T) {
	var asked atomic.Int32
	triage := func(ctx context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
		asked.Add(1)
		if req.Verb != plugin.VerbDecide || !strings.Contains(req.Prompt, "printer on fire") || len(req.Schema) == 0 {
			t.Errorf("request: verb %q, prompt %q, schema %s", req.Verb, req.Prompt, req.Schema)
		}
		return plugin.Submit(map[string]any{"priority": "high"})
	}
	var got kitsoki.Call
	create := func(ctx context.Context, call kitsoki.Call) (map[string]any, error) {
		got = call
		call.World["priority"] = "tampered" // a copy: the session keeps its own
		return map[string]any{"id": "T-1"}, nil
	}
	s, _ := open(t, deskApp, kitsoki.WithAgent("agent.triage", triage), kitsoki.WithHandler("host.tickets.create", create),
		kitsoki.WithSessionID("desk-1"))
	out := do(t, s, "report text='printer on fire'")
	if out.State != "triaging" || out.View != "Priority: high" || asked.Load() != 1 {
		t.Fatalf("after report: state %q view %q, agent asked %d time(s)", out.State, out.View, asked.Load())
	}
	out = do(t, s, "file")
	if d := cmp.Diff(&kitsoki.Outcome{From: "triaging", State: "filing", View: "Ticket T-1 (high)", Says: []string{"filed"}}, out); d != "" {
		t.Errorf("file (-want +got):\n%s", d)
	}
	want := kitsoki.Call{Name: "host.tickets.create", ID: "create", SessionID: "desk-1", Turn: 2, State: "filing",
		Args: map[string]any{"call": "create", "text": "printer on fire", "priority": "high"}}
	if d := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".World" }, cmp.Ignore())); d != "" {
		t.Errorf("handler call (-want +got):\n%s", d)
	}
	if s.World()["priority"] != "high" {
		t.Errorf("world.priority = %v: the handler's write to its copy reached the session", s.World()["priority"])
	}
	if out := do(t, s, "done"); !out.Done {
		t.Error("not done in closed")
	}
}

// An agent given with WithInlineAgent answers as one given with WithAgent:
// the same outcomes and the same trace, for an answer and for a failure.
func TestInlineAgent(t *testing.T) {
	answers := []func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error){
		func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return plugin.Submit(map[string]any{"priority": "high"})
		},
		func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return nil, &kitsoki.AgentError{Kind: kitsoki.KindTransportError, Detail: "queue is down"}
		},
	}
	for i, fn := range answers {
		run := func(opt func(string, kitsoki.AgentFunc) kitsoki.Option) ([]*kitsoki.Outcome, []byte) {
			s, start := open(t, deskApp, opt("agent.triage", fn))
			outs := []*kitsoki.Outcome{start, do(t, s, "report text=x")}
			tr, err := s.Trace()
			if err != nil {
				t.Fatal(err)
			}
			return outs, tr
		}
		wantOuts, wantTrace := run(kitsoki.WithAgent)
		outs, tr := run(kitsoki.WithInlineAgent)
		if d := cmp.Diff(wantOuts, outs, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); d != "" {
			t.Errorf("answer %d: outcomes (-WithAgent +WithInlineAgent):\n%s", i, d)
		}
		if d := cmp.Diff(string(wantTrace), string(tr)); d != "" {
			t.Errorf("answer %d: trace (-WithAgent +WithInlineAgent):\n%s", i, d)
		}
	}
}

// An agent's failure reaches on_error with its kind; the outcome carries
// it as an *AgentError with the text world.last_error holds.
func TestAgentFailures(t *testing.T) {
	tests := []struct {
		name string
		fn   kitsoki.AgentFunc
		kind kitsoki.ErrorKind
		text string
	}{
		{"agent error keeps its kind",
			func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
				return nil, &kitsoki.AgentError{Kind: kitsoki.KindTransportError, Detail: "queue is down"}
			}, kitsoki.KindTransportError, "agent: transport_error: queue is down"},
		{"plain error is a plugin crash",
			func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
				return nil, errors.New("out of office")
			}, kitsoki.KindPluginCrash, "agent: plugin_crash: out of office"},
		{"submission outside the schema",
			func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
				return plugin.Submit(map[string]any{"priority": "urgent"})
			}, kitsoki.KindSchemaInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t, deskApp, kitsoki.WithAgent("agent.triage", tt.fn))
			out := do(t, s, "report text=x") // on_error: intake handles it
			if out.State != "intake" || len(out.Handled) != 1 {
				t.Fatalf("state %q, handled %v; want intake and one handled failure", out.State, out.Handled)
			}
			h := out.Handled[0]
			var ae *kitsoki.AgentError
			if !errors.As(h.Err, &ae) || ae.Kind != tt.kind {
				t.Fatalf("handled error = %#v, want an *AgentError of kind %s", h.Err, tt.kind)
			}
			if tt.text != "" && h.Err.Error() != tt.text {
				t.Errorf("error text = %q, want %q", h.Err, tt.text)
			}
			if h.Invoke != "host.agent.decide" || h.ID != "triage" || h.OnError != "intake" || h.CallID == "" {
				t.Errorf("handled = %+v", h)
			}
			if got := s.World()["last_error"]; got != h.Err.Error() {
				t.Errorf("world.last_error = %q, want %q", got, h.Err)
			}
		})
	}
}

// A builtin.inprocess alias nobody bound fails its calls saying how to
// bind it.
func TestUnboundInProcessAgent(t *testing.T) {
	s, _ := open(t, deskApp)
	out := do(t, s, "report text=x")
	want := `agent: transport_error: builtin.inprocess agent "agent.triage" has no implementation: register one with kitsoki.WithAgent("agent.triage", fn)`
	if len(out.Handled) != 1 || out.Handled[0].Err.Error() != want {
		t.Fatalf("handled = %v, want one failure %q", out.Handled, want)
	}
}

// A failed call with no on_error is a *CallError with the text `kitsoki
// run` prints after "error: "; the outcome is still returned.
func TestUnhandledCallError(t *testing.T) {
	s, _ := open(t, deskApp,
		kitsoki.WithAgent("agent.triage", func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return plugin.Submit(map[string]any{"priority": "low"})
		}),
		kitsoki.WithHandler("host.tickets.create", func(context.Context, kitsoki.Call) (map[string]any, error) {
			return nil, errors.New("tracker is read-only")
		}))
	do(t, s, "report text=x")
	out, err := s.Do(t.Context(), "file")
	var ce *kitsoki.CallError
	if !errors.As(err, &ce) || err.Error() != "host.tickets.create: tracker is read-only" || ce.Invoke != "host.tickets.create" {
		t.Fatalf("error = %#v (%v), want *CallError %q", err, err, "host.tickets.create: tracker is read-only")
	}
	if out == nil || out.State != "filing" {
		t.Errorf("outcome = %+v, want state filing", out)
	}
}

// A guard that cannot be evaluated aborts the turn: a *FaultError.
func TestFault(t *testing.T) {
	s, _ := open(t, deskApp)
	out, err := s.Do(t.Context(), "inspect")
	var fe *kitsoki.FaultError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want a *FaultError", err)
	}
	want := `guard error in state intake, arm 0 of on.inspect (app.yaml:37:17): when "world.meta.deep.field == 1": col 17: cannot fetch field from <nil>`
	if err.Error() != want {
		t.Errorf("fault:\n%s\nwant:\n%s", err, want)
	}
	if out == nil || out.State != "intake" {
		t.Errorf("outcome = %+v", out)
	}
}

// A replay warns when an episode answers another request than it was
// recorded for, and under WithCassetteStrict it misses instead.
func TestCassetteWarningsAndMisses(t *testing.T) {
	const hashNote = `cassette episode 1 "recorded_agent.demo_greeting" (agent.demo): recorded for a different request (hash 6def3da81df21156 ≠ 60b248ea47938650)`
	t.Run("warning", func(t *testing.T) {
		s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape))
		out := do(t, s, "greet name=Bob style=formal")
		if d := cmp.Diff([]string{hashNote}, out.Warnings); d != "" {
			t.Errorf("warnings (-want +got):\n%s", d)
		}
	})
	t.Run("strict miss", func(t *testing.T) {
		s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape), kitsoki.WithCassetteStrict())
		out, err := s.Do(t.Context(), "greet name=Bob style=formal")
		var miss *kitsoki.ReplayMissError
		if !errors.As(err, &miss) {
			t.Fatalf("error = %v, want a *ReplayMissError", err)
		}
		want := "cassette " + demoTape + ": " + hashNote + "; refused under --cassette-strict"
		if err.Error() != want {
			t.Errorf("miss:\n%s\nwant:\n%s", err, want)
		}
		if out == nil || out.State != "lobby" || len(out.Handled) != 1 {
			t.Errorf("outcome = %+v, want lobby with the failure handled", out)
		}
	})
}

// The cassette of agent failures replays them with their recorded kinds.
func TestReplayAgentErrors(t *testing.T) {
	s, _ := open(t, helloApp, kitsoki.WithCassette(errorTape))
	out := do(t, s, "greet name=Ada")
	if len(out.Handled) != 1 || out.Handled[0].Err.Error() != "agent: plugin_crash: the greeter is out of office" {
		t.Fatalf("handled = %v", out.Handled)
	}
}

// Options the story cannot use fail Open, naming the option.
func TestOpenErrors(t *testing.T) {
	nop := func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) { return nil, nil }
	nopHandler := func(context.Context, kitsoki.Call) (map[string]any, error) { return nil, nil }
	abs, err := filepath.Abs(deskApp)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(t.TempDir(), "full.jsonl")
	if err := os.WriteFile(full, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		app  string
		opts []kitsoki.Option
		want string
	}{
		{"undeclared agent", deskApp, []kitsoki.Option{kitsoki.WithAgent("agent.nope", nop)},
			`kitsoki.WithAgent("agent.nope"): "agent.nope" is not declared under agent_plugins: in ` + abs + ` (declared: agent.claude, agent.triage); declare it, e.g. agent.nope: {plugin: builtin.inprocess}`},
		{"nil agent", deskApp, []kitsoki.Option{kitsoki.WithAgent("agent.triage", nil)},
			`kitsoki.WithAgent("agent.triage"): the agent func is nil`},
		{"undeclared inline agent", deskApp, []kitsoki.Option{kitsoki.WithInlineAgent("agent.nope", nop)},
			`kitsoki.WithInlineAgent("agent.nope"): "agent.nope" is not declared under agent_plugins: in ` + abs + ` (declared: agent.claude, agent.triage); declare it, e.g. agent.nope: {plugin: builtin.inprocess}`},
		{"nil inline agent", deskApp, []kitsoki.Option{kitsoki.WithInlineAgent("agent.triage", nil)},
			`kitsoki.WithInlineAgent("agent.triage"): the agent func is nil`},
		{"the last option for an alias names it", deskApp, []kitsoki.Option{kitsoki.WithInlineAgent("agent.triage", nop), kitsoki.WithAgent("agent.triage", nil)},
			`kitsoki.WithAgent("agent.triage"): the agent func is nil`},
		{"handler nothing invokes", deskApp, []kitsoki.Option{kitsoki.WithHandler("host.tickets.close", nopHandler)},
			`kitsoki.WithHandler("host.tickets.close"): no invoke of ` + abs + ` names "host.tickets.close" (invoked: host.agent.decide, host.tickets.create)`},
		{"nil handler", deskApp, []kitsoki.Option{kitsoki.WithHandler("host.tickets.create", nil)},
			`kitsoki.WithHandler("host.tickets.create"): the handler func is nil`},
		{"undeclared world key", deskApp, []kitsoki.Option{kitsoki.WithWorld(map[string]any{"colour": "red"})},
			`kitsoki.WithWorld: "colour" is not declared in world: of ` + abs + ` (declared: last_error, meta, priority, session_cost_usd, session_id, text, ticket, turn_cost_usd, write_mode_scope)`},
		{"mistyped world value", deskApp, []kitsoki.Option{kitsoki.WithWorld(map[string]any{"text": 3})},
			`world key "text" is declared string; the initial value 3 is not a string`},
		{"unknown root", deskApp, []kitsoki.Option{kitsoki.WithRoot("nowhere")},
			`root state "nowhere" does not exist (states: closed, filing, intake, triaging)`},
		{"strict without cassette", deskApp, []kitsoki.Option{kitsoki.WithCassetteStrict()},
			`kitsoki.WithCassetteStrict applies to a replay: give kitsoki.WithCassette(path) too`},
		{"zero agent timeout", deskApp, []kitsoki.Option{kitsoki.WithAgentTimeout(0)},
			`kitsoki.WithAgentTimeout(0s): the deadline must be positive`},
		{"trace file in use", deskApp, []kitsoki.Option{kitsoki.WithTraceFile(full)},
			`trace ` + full + ` already holds a session; pass another kitsoki.WithTraceFile path (or remove the file)`},
		{"handler nothing provides", deskApp, nil,
			`app.yaml:59:17: states.filing.on_enter[0].invoke: state "filing": on_enter invoke "host.tickets.create": no handler provides host.tickets.create: it is not built in, no host plugin serves it and it is no interface's; declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if tt.app == deskApp && tt.name != "handler nothing provides" {
				opts = append([]kitsoki.Option{deskTickets}, opts...)
			}
			s, err := kitsoki.Open(tt.app, opts...)
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// A story that does not load fails Open with its file:line:col message.
func TestOpenLoadError(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte("app: {id: x}\nroot: a\nstates:\n  a: {bogus: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := kitsoki.Open(app, kitsoki.WithWorkspace(dir))
	if err == nil || !strings.Contains(err.Error(), "app.yaml:4:") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("error = %v, want one naming app.yaml:4: and the key", err)
	}
}

// WithTraceFile writes the trace to the file; Trace and Events read it.
func TestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "s.jsonl")
	s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape), kitsoki.WithTraceFile(path))
	do(t, s, "greet name=Ada style=formal")
	b, err := s.Trace()
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || string(b) != string(onDisk) {
		t.Fatalf("Trace() = %d bytes, file %d bytes", len(b), len(onDisk))
	}
	evs, err := s.Events()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		if ev.Turn == 1 && (ev.Kind == "turn.start" || ev.Kind == "turn.end") {
			kinds = append(kinds, ev.Kind)
		}
	}
	if d := cmp.Diff([]string{"turn.start", "turn.end"}, kinds); d != "" {
		t.Errorf("turn 1 boundaries (-want +got):\n%s", d)
	}
}

// The session's lifecycle: Turn before Start, Start twice, use after
// Close, a line that does not parse.
func TestLifecycle(t *testing.T) {
	s, err := kitsoki.Open(helloApp, kitsoki.WithCassette(demoTape))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.Turn(ctx, "greet", nil); err == nil || err.Error() != "kitsoki: session not started: call Start first" {
		t.Errorf("Turn before Start: %v", err)
	}
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx); err == nil || err.Error() != "kitsoki: session already started" {
		t.Errorf("second Start: %v", err)
	}
	if _, err := s.Do(ctx, "name=Ada"); err == nil || err.Error() != `kitsoki: "name=Ada": the line must start with an intent name` {
		t.Errorf("bad line: %v", err)
	}
	if s.ID() != kitsoki.DefaultSessionID {
		t.Errorf("ID = %q", s.ID())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Do(ctx, "greet name=Ada"); err == nil || err.Error() != "kitsoki: session is closed" {
		t.Errorf("Do after Close: %v", err)
	}
}

// WithWorld and WithRoot set where the session starts.
func TestWorldAndRoot(t *testing.T) {
	s, start := open(t, helloApp, kitsoki.WithCassette(demoTape), kitsoki.WithWorld(map[string]any{"greetings": 3}), kitsoki.WithRoot("lobby"))
	if start.View != "Greeted so far: 3. Try: greet name=Ada style=formal" {
		t.Errorf("view = %q", start.View)
	}
	if out := do(t, s, "bye"); !out.Done {
		t.Error("bye with greetings=3 did not leave")
	}
}

// WithAgent("agent.claude") answers the invokes that name no agent: (the
// built-in claude path), so no claude CLI is started.
func TestBuiltinPathAgent(t *testing.T) {
	var prompt string
	s, _ := open(t, "testdata/builtin/app.yaml", kitsoki.WithAgent("agent.claude",
		func(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			prompt = req.Prompt
			return plugin.Submit("a runtime for stories")
		}))
	out := do(t, s, "ask")
	if out.View != "a runtime for stories" || prompt != "What is kitsoki?" {
		t.Errorf("view %q, prompt %q", out.View, prompt)
	}
}

// An agent func gets its own copy of the request's with: and world: a
// write to them does not reach the session or the trace.
func TestAgentRequestIsACopy(t *testing.T) {
	s, _ := open(t, deskApp, kitsoki.WithWorld(map[string]any{"meta": map[string]any{"seen": false}}),
		kitsoki.WithAgent("agent.triage", func(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			req.World.Vars["meta"].(map[string]any)["seen"] = true
			req.With["args"].(map[string]any)["text"] = "tampered"
			return plugin.Submit(map[string]any{"priority": "low"})
		}))
	do(t, s, "report text=x")
	if got := s.World()["meta"]; !cmp.Equal(got, map[string]any{"seen": false}) {
		t.Errorf("world.meta = %v: the agent's write reached the session", got)
	}
	evs, err := s.Events()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "harness.dispatched" {
			if args := ev.Payload["args"].(map[string]any)["args"].(map[string]any); args["text"] != "x" {
				t.Errorf("traced args = %v", args)
			}
		}
	}
}

// WithAgentTimeout sets the hard deadline of a call: the request's
// deadline is the call's start plus it, on the session's clock.
func TestAgentTimeout(t *testing.T) {
	tests := []struct {
		name string
		opts []kitsoki.Option
		want string
	}{
		{"default", nil, "2026-01-01T00:10:00Z"},
		{"90s", []kitsoki.Option{kitsoki.WithAgentTimeout(90 * time.Second)}, "2026-01-01T00:01:30Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deadline string
			s, _ := open(t, deskApp, append(tt.opts, kitsoki.WithAgent("agent.triage",
				func(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
					deadline = req.Deadline
					return plugin.Submit(map[string]any{"priority": "low"})
				}))...)
			do(t, s, "report text=x")
			if deadline != tt.want {
				t.Errorf("deadline = %q, want %q", deadline, tt.want)
			}
		})
	}
}

// Warnings are the story's load warnings, as `kitsoki run` prints them
// after "warning: ".
func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	story := "app: {id: w}\nintents: {go: {}}\nroot: a\nstates:\n  a:\n    on_enter:\n      - {say: hi, set: {}}\n    on: {go: [{target: b}]}\n  b: {terminal: true}\n"
	if err := os.WriteFile(app, []byte(story), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := kitsoki.Open(app, kitsoki.WithWorkspace(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"app.yaml:7:9: states.a.on_enter[0]: effect has several actions (set, say): only set runs; put each in its own item"}
	if d := cmp.Diff(want, s.Warnings()); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// A selection: pin whose evidence is missing is a warning, and with
// WithStrictPins fails Open with the message `kitsoki run --strict-pins`
// prints.
func TestPins(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("stories/hello")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.yaml")
	b, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.Replace(string(b), "        on_error: lobby\n",
		"        on_error: lobby\n        selection: {profile: agent.demo, model: scripted-demo, evidence: evals/reports/compose/missing.json}\n", 1)
	if pinned == string(b) {
		t.Fatal("stories/hello/app.yaml changed shape; update the test")
	}
	if err := os.WriteFile(app, []byte(pinned), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = `pin for call "compose" not applied: evidence evals/reports/compose/missing.json is missing (run kitsoki eval run --live to produce it); using the default route (agent.demo)`
	s, err := kitsoki.Open(app, kitsoki.WithWorkspace(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := cmp.Diff([]string{warning}, s.Warnings()); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	_, err = kitsoki.Open(app, kitsoki.WithWorkspace(dir), kitsoki.WithStrictPins())
	if err == nil || !strings.Contains(err.Error(), "pins not honoured (--strict-pins):\n  "+warning) {
		t.Errorf("strict: %v", err)
	}
}

// Readers may watch a session from other goroutines while turns run.
func TestConcurrentReaders(t *testing.T) {
	s, _ := open(t, helloApp, kitsoki.WithCassette(demoTape))
	done := make(chan struct{})
	readers := make(chan struct{})
	go func() {
		defer close(readers)
		for {
			select {
			case <-done:
				return
			default:
				_ = s.World()
				_ = s.State()
				_ = s.Allowed()
				if _, err := s.Trace(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for _, line := range []string{"greet name=Ada style=formal", "again", "greet name=Grace", "bye"} {
		do(t, s, line)
	}
	close(done)
	<-readers
	if s.State() != "farewell" {
		t.Errorf("state = %q", s.State())
	}
}

// A handler the story invokes and only a cassette answers is provided by
// WithCassette: Open does not refuse it, and the episode answers the call.
func TestCassetteProvidesHandler(t *testing.T) {
	tape := filepath.Join(t.TempDir(), "tickets.yaml")
	const src = `kind: host_cassette
app_id: desk
episodes:
  - id: create
    match: {handler: host.tickets}
    response: {data: {id: T-7}}
`
	if err := os.WriteFile(tape, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := kitsoki.Open(deskApp, kitsoki.WithStartTime(epoch), kitsoki.WithCassette(tape),
		kitsoki.WithAgent("agent.triage", func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return plugin.Submit(map[string]any{"priority": "low"})
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, s, "report text=x")
	out := do(t, s, "file")
	if got := s.World()["ticket"]; out.State != "filing" || got != "T-7" {
		t.Errorf("state %q, world.ticket %v; want filing and T-7 from the cassette", out.State, got)
	}
}
