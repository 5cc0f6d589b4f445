package agent_test

// The transport conformance table: the same requests through every
// transport, answered by the same agent (examples/plugins/echo), must give
// byte-identical submissions, and through the host identical traces and
// identical error kinds. A transport joins by adding a named constructor
// to transports below. The cassette transport replays what echo answered;
// transports in replaying are held to identical submissions, error kinds and
// bind data, but not to identical meta, traces or sub-events, which a
// replay makes its own (its meta names the episode, its call_id comes from
// the cassette key) or cannot carry.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/agents/mcphttp"
	"github.com/kitsoki/kitsoki/internal/agents/subprocess"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/plugin"
)

// transport builds an agent that answers like echo.Agent over one wire.
// The agent is closed when the test ends.
type transport struct {
	name  string
	build func(t *testing.T) agent.Agent
}

var transports = []transport{
	{"inprocess", func(t *testing.T) agent.Agent { return inProcess(echo.Agent{}) }},
	{"subprocess", func(t *testing.T) agent.Agent {
		a, err := subprocess.New(agent.Declaration{Alias: "agent.echo", Command: echoGo(t)},
			subprocess.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}},
	{"mcp_http", func(t *testing.T) agent.Agent {
		srv := httptest.NewServer(plugin.MCPHandler(echo.Agent{}))
		t.Cleanup(srv.Close)
		a, err := mcphttp.New(agent.Declaration{Alias: "agent.echo", Endpoint: srv.URL + "/mcp"},
			mcphttp.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}},
	{"cassette", func(t *testing.T) agent.Agent { return recordReplay{live: inProcess(echo.Agent{})} }},
}

// inProcess runs a plugin SDK agent in process: it answers the call's wire
// request.
func inProcess(p plugin.Agent) agent.Agent {
	return agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		return p.Ask(ctx, call.Request)
	})
}

// replaying names the transports that answer from recordings, and why they
// cannot match the others byte for byte.
var replaying = map[string]string{"cassette": "cassette meta, call_ids and episode_id are its own; episodes carry no sub-events"}

// recordReplay answers each call the way the cassette transport replays a
// recording: live's answer is recorded by replay.Recorder, written as
// cassette YAML, parsed back, and replayed by cassette.NewAgent.
type recordReplay struct{ live agent.Agent }

func (a recordReplay) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	req := call.Request
	rec := replay.NewRecorder("conformance", "")
	_, _ = rec.Agent("agent.echo", a.live).Ask(ctx, agent.NewCall(req))
	b, err := rec.Encode()
	if err != nil {
		return nil, err
	}
	c, err := cassette.Parse(b, "conformance.yaml", cassette.WithGetenv(func(string) string { return "" }))
	if err != nil {
		return nil, err
	}
	return cassette.NewAgent(c, "agent.echo").Ask(ctx, agent.NewCall(req))
}

func (recordReplay) Close() error { return nil }

func open(t *testing.T, tr transport) agent.Agent {
	a := tr.build(t)
	t.Cleanup(func() { a.Close() })
	return a
}

var (
	echoGoOnce sync.Once
	echoGoPath string
	echoGoErr  error
	buildDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// echoGo builds examples/plugins/echo-go once per test run.
func echoGo(t *testing.T) string {
	t.Helper()
	echoGoOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			echoGoErr = err
			return
		}
		if buildDir, echoGoErr = os.MkdirTemp("", "kitsoki-conformance-"); echoGoErr != nil {
			return
		}
		echoGoPath = filepath.Join(buildDir, "echo-go")
		out, err := exec.Command(gobin, "build", "-o", echoGoPath, "github.com/kitsoki/kitsoki/examples/plugins/echo-go").CombinedOutput()
		if err != nil {
			echoGoErr = &buildError{err, out}
		}
	})
	if echoGoErr != nil {
		t.Fatalf("build echo-go: %v", echoGoErr)
	}
	return echoGoPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// requests are answered identically by every transport.
var requests = []struct {
	name string
	req  agent.AskRequest
}{
	{"echo", agent.AskRequest{SessionID: "s", Turn: 1, StatePath: "review", Verb: "ask", Prompt: "What now?", CallID: "00112233445566ff"}},
	{"html and unicode", agent.AskRequest{Verb: "decide", Prompt: "x", With: map[string]any{
		"answer": `{"decision":"approve","note":"<b> & \"é\" 日本 \u2028"}`}}},
	{"nested and numbers", agent.AskRequest{Verb: "extract", With: map[string]any{
		"answer": `{"items":[{"n":1.50},{"n":1e3},{"n":-0}],"empty":{},"null":null}`}}},
	{"plain string answer", agent.AskRequest{Verb: "task", With: map[string]any{"answer": "just text"}}},
	{"schema and world", agent.AskRequest{Verb: "decide", Schema: []byte(`{"type":"object"}`),
		World: plugin.World{Vars: map[string]any{"claim": "taxi", "amount": 40.0}}, With: map[string]any{"answer": map[string]any{"ok": true}}}},
	{"sub-events", agent.AskRequest{Verb: "task", CallID: "c1", With: map[string]any{"sub_events": []any{
		map[string]any{"kind": "agent.echo.step", "call_id": "c1", "payload": map[string]any{"i": 1.0}}}}}},
}

func TestConformanceSubmissions(t *testing.T) {
	want := make([]*agent.AskResponse, len(requests))
	for i, r := range requests {
		resp, err := transports[0].build(t).Ask(context.Background(), agent.NewCall(&r.req))
		if err != nil {
			t.Fatalf("%s in-process: %v", r.name, err)
		}
		want[i] = resp
	}
	for _, tr := range transports[1:] {
		t.Run(tr.name, func(t *testing.T) {
			a := open(t, tr)
			for i, r := range requests {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				got, err := a.Ask(ctx, agent.NewCall(&r.req))
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if string(got.Submission) != string(want[i].Submission) {
					t.Errorf("%s: submission %s, in-process %s", r.name, got.Submission, want[i].Submission)
				}
				if _, ok := replaying[tr.name]; ok {
					continue
				}
				if diff := cmp.Diff(jsonValue(t, want[i]), jsonValue(t, got)); diff != "" {
					t.Errorf("%s: response differs from in-process (-in-process +%s):\n%s", r.name, tr.name, diff)
				}
			}
		})
	}
}

// jsonValue is v as JSON sees it. An in-process agent's meta keeps Go
// types (an int stays an int) where a wire decodes float64; the JSON, and
// so the trace, is the same.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutMeta is bind data as JSON sees it, without the transport's meta.
func withoutMeta(t *testing.T, data map[string]any) any {
	v, _ := jsonValue(t, data).(map[string]any)
	delete(v, "meta")
	return v
}

// hostRun dispatches one decide through the host with a on the conformance
// story, on a fake clock, and returns the result and the trace bytes.
func hostRun(t *testing.T, a agent.Agent, args map[string]any) (*host.Result, []byte) {
	t.Helper()
	st, err := story.Load("testdata/conformance/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	sink := trace.NewMemSink(trace.WithClock(clk))
	reg := agent.NewRegistry(slog.New(slog.DiscardHandler))
	reg.Register("agent.echo", a)
	h := host.New(st, reg, sink, host.WithClock(clk), host.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	with := map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json", "call": "verdict"}
	for k, v := range args {
		with[k] = v
	}
	// The host measures the call's deadline on its clock: in a case that
	// sets a timeout, move the fake clock on while the call is in flight so
	// that the deadline can pass (the overrunning agent sleeps seconds of
	// real time, far longer than this takes to reach the timeout). Other
	// cases keep the clock still, so their traces compare byte for byte.
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		if _, ok := args["timeout"]; !ok {
			return
		}
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				clk.Advance(50 * time.Millisecond)
			}
		}
	}()
	res, err := h.Dispatch(context.Background(), &host.Call{Namespace: "host.agent.decide", Args: with,
		Invoke:    &story.Invoke{Name: "host.agent.decide", Agent: "agent.echo", ID: "verdict"},
		SessionID: "s1", Turn: 1, State: "asked", World: map[string]any{"verdict": map[string]any{}}})
	close(done)
	<-ticked
	if err != nil {
		t.Fatal(err)
	}
	return res, sink.Bytes()
}

// The call_id the host gives the conformance call (turn 1, state asked,
// seq 0), for sub-events that must match it.
var conformanceCallID = trace.CallID("conformance", "1:asked:0")

func TestConformanceThroughHost(t *testing.T) {
	cases := []struct {
		name     string
		args     map[string]any
		wantKind agent.ErrorKind // "" for success
		sameText bool            // the error text is the host's, not the transport's
	}{
		{"valid answer", map[string]any{"answer": `{"decision":"approve","reason":"<ok> é"}`}, "", true},
		{"schema-invalid answer", map[string]any{"answer": `{"decision":"maybe"}`}, agent.KindSchemaInvalid, true},
		{"deadline overrun", map[string]any{"sleep_ms": 3000, "timeout": "200ms"}, agent.KindDeadlineExceeded, false},
		{"sub-event namespace", map[string]any{"answer": `{"decision":"reject"}`, "sub_events": []any{
			map[string]any{"kind": "other.step", "call_id": conformanceCallID, "payload": map[string]any{}}}},
			agent.KindSubEventNamespaceViolation, true},
		{"sub-event call_id", map[string]any{"answer": `{"decision":"reject"}`, "sub_events": []any{
			map[string]any{"kind": "agent.echo.step", "call_id": "0000000000000000", "payload": map[string]any{}}}},
			agent.KindSubEventCallIDMismatch, true},
		{"sub-events land", map[string]any{"answer": `{"decision":"reject"}`, "sub_events": []any{
			map[string]any{"kind": "agent.echo.step", "call_id": conformanceCallID, "payload": map[string]any{"tool": "bash"}}}},
			"", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var firstRes *host.Result
			var firstTrace []byte
			for i, tr := range transports {
				if _, ok := replaying[tr.name]; ok && tc.args["sub_events"] != nil {
					continue
				}
				res, tr2 := hostRun(t, open(t, tr), tc.args)
				gotKind := agent.ErrorKind("")
				if res.Err != nil {
					ae, ok := agent.AsAskError(res.Err)
					if !ok {
						t.Fatalf("%s: result error %v is not an AskError", tr.name, res.Err)
					}
					gotKind = ae.Kind
				}
				if gotKind != tc.wantKind {
					t.Errorf("%s: error kind %q (%v), want %q", tr.name, gotKind, res.Err, tc.wantKind)
				}
				if i == 0 {
					firstRes, firstTrace = res, tr2
					continue
				}
				if !tc.sameText {
					continue
				}
				if _, ok := replaying[tr.name]; ok {
					if diff := cmp.Diff(withoutMeta(t, firstRes.Data), withoutMeta(t, res.Data)); diff != "" {
						t.Errorf("%s: bind data differs (-%s +%s):\n%s", tr.name, transports[0].name, tr.name, diff)
					}
					continue
				}
				if diff := cmp.Diff(jsonValue(t, firstRes.Data), jsonValue(t, res.Data)); diff != "" {
					t.Errorf("%s: bind data differs (-%s +%s):\n%s", tr.name, transports[0].name, tr.name, diff)
				}
				if diff := cmp.Diff(string(firstTrace), string(tr2)); diff != "" {
					t.Errorf("%s: trace differs (-%s +%s):\n%s", tr.name, transports[0].name, tr.name, diff)
				}
			}
		})
	}
}
