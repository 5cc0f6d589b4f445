package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/ask/golden/*.txt")

// script is what a scripted agent does when asked.
type script struct {
	sub       string         // the submission, raw
	meta      map[string]any // the response's meta
	subEvents []plugin.Event // CallID "" is filled with the call's id
	err       error          // returned instead of a response
	nilResp   bool           // return neither a response nor an error
	took      time.Duration  // the fake clock moves on by this much during the call
	waitCtx   bool           // after took, wait for the call's context and return its error
	ignoreCtx bool           // after took, never answer (until the test ends)
	cancel    bool           // cancel the dispatching context, then wait for the call's
}

// scripted is an agent that follows a script and records every call.
type scripted struct {
	name    string
	s       script
	clk     *clock.Fake
	cancel  context.CancelFunc
	release chan struct{} // closed at the end of the test
	log     *askLog
}

func (a *scripted) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	a.log.add(a.name, call)
	a.clk.Advance(a.s.took)
	switch {
	case a.s.cancel:
		a.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	case a.s.waitCtx:
		<-ctx.Done()
		return nil, ctx.Err()
	case a.s.ignoreCtx:
		<-a.release
		return &agent.AskResponse{Submission: json.RawMessage(`{"decision":"approve"}`)}, nil
	case a.s.err != nil:
		return nil, a.s.err
	case a.s.nilResp:
		return nil, nil
	}
	resp := &agent.AskResponse{Meta: a.s.meta}
	if a.s.sub != "" {
		resp.Submission = json.RawMessage(a.s.sub)
	}
	for _, ev := range a.s.subEvents {
		if ev.CallID == "" {
			ev.CallID = call.Request.CallID
		}
		resp.SubEvents = append(resp.SubEvents, ev)
	}
	return resp, nil
}

func (a *scripted) Close() error { return nil }

// eligible is a scripted agent whose rejected answers fall back to
// agent.claude (as builtin.local_llm's do).
type eligible struct{ *scripted }

func (eligible) FallbackEligible() bool { return true }

// replaying is a scripted agent that names the recorded episode answering.
type replaying struct {
	*scripted
	ep agent.Episode
}

func (r replaying) SelectEpisode(context.Context, *agent.Call) (agent.Episode, bool) {
	return r.ep, true
}

// askLog records what every agent was asked, in order.
type askLog struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *askLog) add(who string, c *agent.Call) {
	rec := map[string]any{"agent": who, "alias": c.Alias, "model": c.Model, "effort": c.Effort,
		"schema_path": c.SchemaPath, "validates": c.Validate != nil, "provider": c.ProviderName,
		"request": c.Request, "has_run": c.Run != nil}
	if c.Persona != nil {
		rec["persona"] = c.Persona.Name
	}
	if c.Provider != nil {
		rec["provider_model"] = c.Provider.Model
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, rec)
}

// askCase is one dispatch of the golden test.
type askCase struct {
	name     string
	verb     string         // default decide
	invoke   string         // id of the story's invoke: plug, local, builtin
	with     map[string]any // default: the invoke's own with:
	agents   map[string]func(*scripted) agent.Agent
	scripts  map[string]script // by agent name: agent.plug, agent.local, agent.claude, builtin
	route    *Route
	noClaude bool // agent.claude is neither declared nor registered
	run      bool // install a run hook
}

// defaultWith is each invoke's with: map as dispatch renders it.
var defaultWith = map[string]map[string]any{
	"plug":    {"agent": "judge", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json", "args": map[string]any{"claim": "taxi", "amount": 40}},
	"local":   {"prompt": "Decide.", "schema": "schemas/verdict.json"},
	"builtin": {"agent": "judge", "prompt": "Decide.", "schema": "schemas/verdict.json"},
}

// TestAskGolden dispatches one agent call per case on a fake clock and
// compares the trace bytes, what each agent was asked and the result with
// testdata/ask/golden/<case>.txt: the record of how an agent call goes
// through the host. Run with -update to rewrite the files.
func TestAskGolden(t *testing.T) {
	okSub := `{"decision":"approve","reason":"within policy"}`
	badSub := `{"decision":"maybe"}`
	stepEv := plugin.Event{Kind: "agent.plug.step", Payload: map[string]any{"tool": "bash"}}
	tests := []askCase{
		{name: "plugin_decide", invoke: "plug", with: map[string]any{"agent": "judge", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json",
			"args": map[string]any{"claim": "taxi", "amount": 40}, "timeout": 90},
			scripts: map[string]script{"agent.plug": {sub: okSub, meta: map[string]any{"cost_usd": 0.5}, took: 1500 * time.Millisecond, subEvents: []plugin.Event{stepEv}}}},
		{name: "plugin_ask_text", verb: plugin.VerbAsk, invoke: "plug", with: map[string]any{"prompt": "Say hi.", "timeout": "2.5"},
			scripts: map[string]script{"agent.plug": {sub: `hello there`, took: time.Second}}},
		{name: "plugin_ask_empty", verb: plugin.VerbAsk, invoke: "plug", with: map[string]any{"prompt": "Say nothing.", "timeout": "1m"},
			scripts: map[string]script{"agent.plug": {}}},
		{name: "builtin_decide", invoke: "builtin", run: true,
			scripts: map[string]script{"builtin": {sub: okSub, meta: map[string]any{"result": "because", "session_id": "cs-1", "exit_code": 0}, took: 2 * time.Second}}},
		{name: "builtin_task_exit", verb: plugin.VerbTask, invoke: "builtin", with: map[string]any{"prompt": "Do it.", "provider": "cheap"},
			scripts: map[string]script{"builtin": {sub: `"done"`, meta: map[string]any{"result": "stdout text", "exit_code": float64(3)}}}},
		{name: "builtin_no_meta", verb: plugin.VerbExtract, invoke: "builtin", with: map[string]any{"prompt": "Extract."},
			scripts: map[string]script{"builtin": {sub: `{"a":1}`}}},
		{name: "schema_invalid", invoke: "plug",
			scripts: map[string]script{"agent.plug": {sub: badSub, meta: map[string]any{"tokens": 3}, took: time.Second}}},
		{name: "schema_invalid_empty", invoke: "plug",
			scripts: map[string]script{"agent.plug": {meta: map[string]any{"tokens": 3}}}},
		{name: "schema_invalid_not_json", invoke: "plug",
			scripts: map[string]script{"agent.plug": {sub: `approve`}}},
		{name: "fallback_ok", invoke: "local", agents: map[string]func(*scripted) agent.Agent{"agent.local": func(s *scripted) agent.Agent { return eligible{s} }},
			scripts: map[string]script{"agent.local": {sub: badSub, meta: map[string]any{"local": true}, took: time.Second},
				"agent.claude": {sub: okSub, meta: map[string]any{"by": "claude"}, took: 3 * time.Second, subEvents: []plugin.Event{{Kind: "agent.claude.step"}}}}},
		{name: "fallback_ok_no_meta", invoke: "local", agents: map[string]func(*scripted) agent.Agent{"agent.local": func(s *scripted) agent.Agent { return eligible{s} }},
			scripts: map[string]script{"agent.local": {sub: badSub}, "agent.claude": {sub: okSub}}},
		{name: "fallback_invalid_too", invoke: "local", agents: map[string]func(*scripted) agent.Agent{"agent.local": func(s *scripted) agent.Agent { return eligible{s} }},
			scripts: map[string]script{"agent.local": {sub: badSub}, "agent.claude": {sub: badSub, meta: map[string]any{"by": "claude"}}}},
		{name: "fallback_unavailable", invoke: "local", noClaude: true, agents: map[string]func(*scripted) agent.Agent{"agent.local": func(s *scripted) agent.Agent { return eligible{s} }},
			scripts: map[string]script{"agent.local": {sub: badSub}}},
		{name: "fallback_not_eligible", invoke: "local",
			scripts: map[string]script{"agent.local": {sub: badSub}, "agent.claude": {sub: okSub}}},
		{name: "fallback_not_for_other_errors", invoke: "local", agents: map[string]func(*scripted) agent.Agent{"agent.local": func(s *scripted) agent.Agent { return eligible{s} }},
			scripts: map[string]script{"agent.local": {err: agent.Errorf(agent.KindTransportError, "connection refused")}, "agent.claude": {sub: okSub}}},
		{name: "subevent_namespace", invoke: "plug",
			scripts: map[string]script{"agent.plug": {sub: okSub, meta: map[string]any{"m": 1}, subEvents: []plugin.Event{stepEv, {Kind: "other.step"}}}}},
		{name: "subevent_call_id", invoke: "plug",
			scripts: map[string]script{"agent.plug": {sub: okSub, subEvents: []plugin.Event{{Kind: "agent.plug.step", CallID: "0000000000000000"}}}}},
		{name: "deadline_exceeded", invoke: "plug", with: map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json", "timeout": "2s"},
			scripts: map[string]script{"agent.plug": {took: 3 * time.Second, waitCtx: true}}},
		{name: "deadline_late_answer", invoke: "plug", with: map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json", "timeout": "2s"},
			scripts: map[string]script{"agent.plug": {sub: okSub, took: 3 * time.Second}}},
		{name: "deadline_abandoned", invoke: "plug", with: map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json", "timeout": 1.5},
			scripts: map[string]script{"agent.plug": {took: 2 * time.Second, ignoreCtx: true}}},
		{name: "cancelled", invoke: "plug",
			scripts: map[string]script{"agent.plug": {cancel: true}}},
		{name: "plugin_crash", invoke: "plug",
			scripts: map[string]script{"agent.plug": {err: errors.New("exit status 2")}}},
		{name: "ask_error", invoke: "plug",
			scripts: map[string]script{"agent.plug": {err: agent.Errorf(agent.KindTransportError, "connection reset"), took: time.Second}}},
		{name: "no_response", invoke: "plug",
			scripts: map[string]script{"agent.plug": {nilResp: true}}},
		{name: "cassette_episode", invoke: "plug", agents: map[string]func(*scripted) agent.Agent{
			"agent.plug": func(s *scripted) agent.Agent { return replaying{s, agent.Episode{ID: "audit_ok", MatchIdx: 1}} }},
			scripts: map[string]script{"agent.plug": {sub: okSub, subEvents: []plugin.Event{stepEv}}}},
		{name: "cassette_episode_app", invoke: "plug", agents: map[string]func(*scripted) agent.Agent{
			"agent.plug": func(s *scripted) agent.Agent {
				return replaying{s, agent.Episode{ID: "audit_ok", AppID: "expense-triage"}}
			}},
			scripts: map[string]script{"agent.plug": {sub: badSub}}},
		{name: "route_pinned", invoke: "plug",
			route:   &Route{Profile: "fast", Alias: "agent.local", Model: "m-route", Effort: "high", Pin: &PinState{Applied: true, Evidence: "evals/r.json"}},
			scripts: map[string]script{"agent.local": {sub: okSub}}},
		{name: "route_unhonoured_pin", invoke: "plug",
			route:   &Route{Profile: "agent.plug", Alias: "agent.plug", Pin: &PinState{Reason: "stale evidence"}},
			scripts: map[string]script{"agent.plug": {sub: okSub}}},
		{name: "route_provider_builtin", invoke: "local",
			route:   &Route{Profile: "cheap", Provider: "cheap"},
			scripts: map[string]script{"builtin": {sub: okSub, meta: map[string]any{"result": "r"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runAskCase(t, tt)
			path := filepath.Join("testdata", "ask", "golden", tt.name+".txt")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestAskGolden -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs (-want +got):\n%s", path, diff)
			}
		})
	}
}

// runAskCase dispatches tt and renders the record the golden files hold.
func runAskCase(t *testing.T, tt askCase) []byte {
	t.Helper()
	st, err := story.Load(filepath.Join("testdata", "ask", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var inv *story.Invoke
	for _, eff := range st.States["s"].OnEnter {
		if eff.Invoke != nil && eff.Invoke.ID == tt.invoke {
			inv = eff.Invoke
		}
	}
	if inv == nil {
		t.Fatalf("no invoke %q in the story", tt.invoke)
	}
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	sink := trace.NewMemSink(trace.WithClock(clk))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	log := &askLog{}
	build := func(name string) agent.Agent {
		s := &scripted{name: name, s: tt.scripts[name], clk: clk, cancel: cancel, release: release, log: log}
		if f := tt.agents[name]; f != nil {
			return f(s)
		}
		return s
	}
	decls := st.Plugins
	if tt.noClaude {
		decls = map[string]agent.Declaration{}
		for k, v := range st.Plugins {
			if k != agent.DefaultAlias {
				decls[k] = v
			}
		}
	}
	reg := agent.NewRegistry(nil)
	reg.Configure(decls)
	for _, alias := range []string{"agent.plug", "agent.local", agent.DefaultAlias} {
		if alias == agent.DefaultAlias && tt.noClaude {
			continue
		}
		reg.Register(alias, build(alias))
	}
	opts := []Option{WithClock(clk), WithBuiltin(build("builtin"))}
	if tt.route != nil {
		opts = append(opts, WithRoutes(map[*story.Invoke]*Route{inv: tt.route}))
	}
	if tt.run {
		opts = append(opts, WithRun(func(c *Call) *agent.Run { return &agent.Run{ID: c.SessionID, TitleOwned: c.Run.TitleOwned} }))
	}
	h := New(st, reg, sink, opts...)
	defer h.Close()
	verb := tt.verb
	if verb == "" {
		verb = plugin.VerbDecide
	}
	with := tt.with
	if with == nil {
		with = defaultWith[tt.invoke]
	}
	res, err := h.Dispatch(ctx, &Call{Namespace: AgentNamespace + verb, Args: with, Invoke: inv,
		SessionID: "sess-1", Turn: 2, State: "s", World: map[string]any{"verdict": map[string]any{}}, Run: RunEnv{TitleOwned: true}})
	if err != nil {
		t.Fatalf("dispatch: %v", err)
	}
	var out bytes.Buffer
	out.Write(sink.Bytes())
	out.WriteString("# asked\n")
	log.mu.Lock()
	for _, l := range log.lines {
		writeJSONLine(t, &out, l)
	}
	log.mu.Unlock()
	out.WriteString("# result\n")
	r := map[string]any{"data": res.Data, "call_id": res.CallID}
	if res.Err != nil {
		r["err"] = res.Err.Error()
		if ae, ok := agent.AsAskError(res.Err); ok {
			r["err_kind"] = ae.Kind
		}
	}
	writeJSONLine(t, &out, r)
	return out.Bytes()
}

func writeJSONLine(t *testing.T, out *bytes.Buffer, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out.Write(b)
	out.WriteByte('\n')
}
