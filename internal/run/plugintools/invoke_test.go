package plugintools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

func TestPluginWithoutToolMethodAnswersToolError(t *testing.T) {
	for _, mode := range []string{"notools", "unimplemented"} {
		t.Run(mode, func(t *testing.T) {
			d, _ := toolPlugin(t, "agent.old", mode, decl("record", kanbanOnly, anyObject, ""))
			e := newEnv(t, map[string]agent.Declaration{"agent.old": d}, Options{})
			tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
			mustFail(t, tc.call(t, "kitsoki_agent_old_record", nil),
				"plugin agent.old does not implement agent_tool.invoke (JSON-RPC method not found, -32601): its declaration lists tool record but the plugin serves no agent tools")
			if r := e.logs.records("plugin tool call"); len(r) != 1 || r[0]["outcome"] != OutcomeUnimplemented {
				t.Errorf("logged %v", r)
			}
			// The plugin stays active: it answered; only the method is missing.
			if st := e.svc.PluginStatus(); st[0].State != StateActive {
				t.Errorf("state %s, want active", st[0].State)
			}
		})
	}
}

func TestResultChecks(t *testing.T) {
	outSchema := `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`
	d, _ := toolPlugin(t, "agent.t", "",
		decl("notext", kanbanOnly, anyObject, ""),
		decl("big", kanbanOnly, `{"type":"object","properties":{"bytes":{"type":"integer"}}}`, ""),
		decl("badout", kanbanOnly, anyObject, outSchema),
		decl("record", kanbanOnly, anyObject, outSchema),
		decl("fail", kanbanOnly, anyObject, ""),
	)
	e := newEnv(t, map[string]agent.Declaration{"agent.t": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)

	mustFail(t, tc.call(t, "kitsoki_agent_t_notext", nil),
		"plugin agent.t returned an invalid result for notext: text is missing (fallback text is required)")
	mustFail(t, tc.call(t, "kitsoki_agent_t_badout", nil),
		"plugin agent.t returned an invalid result for badout: structured_content does not match the output schema: /count: type: got string, want integer")
	mustFail(t, tc.call(t, "kitsoki_agent_t_record", nil),
		"plugin agent.t returned an invalid result for record: structured_content does not match the output schema: /: required: missing property 'count'")

	atLimit := tc.call(t, "kitsoki_agent_t_big", map[string]any{"bytes": agent.MaxToolResultBytes})
	if atLimit.IsError || len(mcptest.Text(atLimit)) != agent.MaxToolResultBytes {
		t.Errorf("a 1 MiB result: isError=%v, %d bytes of text", atLimit.IsError, len(mcptest.Text(atLimit)))
	}
	mustFail(t, tc.call(t, "kitsoki_agent_t_big", map[string]any{"bytes": agent.MaxToolResultBytes + 1}),
		"plugin agent.t returned an invalid result for big: text and structured content are 1048577 bytes; the limit is 1048576 (1 MiB)")

	res := tc.call(t, "kitsoki_agent_t_fail", nil)
	if !res.IsError || mcptest.Text(res) != "the tag does not exist" {
		t.Errorf("an is_error answer reaches the agent as it is: isError=%v text=%q", res.IsError, mcptest.Text(res))
	}
	outcomes := map[string]int{}
	for _, r := range e.logs.records("plugin tool call") {
		outcomes[r["outcome"].(string)]++
	}
	if diff := cmp.Diff(map[string]int{OutcomeInvalidResult: 4, OutcomeOK: 1, OutcomeToolError: 1}, outcomes); diff != "" {
		t.Errorf("logged outcomes (-want +got):\n%s", diff)
	}
}

// waitCall starts a call of the wait tool, which only ends when cancelled,
// and returns a channel with its result once the plugin has it.
func waitCall(t *testing.T, tc *testClient, log string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var req = callReq("kitsoki_agent_tagger_wait")
		res, err := tc.CallTool(ctx, req)
		switch {
		case err != nil:
			done <- "protocol error: " + err.Error()
		default:
			done <- mcptest.Text(res)
		}
	}()
	eventually(t, "the plugin has the call", func() bool { return len(eventsOf(pluginEvents(t, log), "invoke")) == 1 })
	return done
}

func TestDisablingCancelsCallsInFlight(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("wait", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
	done := waitCall(t, tc, log)
	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.tagger", false); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if want := "the call to wait was cancelled: plugin agent.tagger was disabled while it ran; it is not retried"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end when its plugin was disabled")
	}
	eventually(t, "the plugin sees $/cancelRequest", func() bool { return len(eventsOf(pluginEvents(t, log), "cancelled")) == 1 })
}

func TestEndOfAgentCallCancelsPluginCall(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("wait", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	s := e.session(t, toolserver.KanbanTask, "call-1")
	tc := connect(t, s, false)
	done := waitCall(t, tc, log)
	s.Close() // the agent call ends
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end with its session")
	}
	eventually(t, "the plugin sees $/cancelRequest", func() bool { return len(eventsOf(pluginEvents(t, log), "cancelled")) == 1 })
	eventually(t, "the call is logged as cancelled", func() bool {
		r := e.logs.records("plugin tool call")
		return len(r) == 1 && r[0]["outcome"] == OutcomeCancelled
	})
}

// TestCallLogs checks the one log line per call: its fields, and that no
// argument, output, secret or plugin configuration appears in any log
// line.
func TestCallLogs(t *testing.T) {
	d, _ := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	d.Env["TAGGER_API_KEY"] = "sk-live-7d1e40c2secret"
	d.Secrets = []string{"sk-live-7d1e40c2secret"}
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
	res := tc.call(t, "kitsoki_agent_tagger_record", map[string]any{"note": "ARGUMENT-MARKER-91"})
	if res.IsError {
		t.Fatal(mcptest.Text(res))
	}
	id := mcptest.Structured(t, res)["invocation_id"]
	recs := e.logs.records("plugin tool call")
	if len(recs) != 1 {
		t.Fatalf("logged %d call lines, want 1", len(recs))
	}
	r := recs[0]
	if _, ok := r["duration"].(float64); !ok {
		t.Errorf("duration = %v, want a number", r["duration"])
	}
	delete(r, "duration")
	delete(r, "time")
	want := map[string]any{"level": "INFO", "msg": "plugin tool call", "component": "plugin-tools",
		"invocation_id": id, "plugin": "agent.tagger", "tool": "record", "task_id": testRun, "session_id": "call-1", "outcome": "ok"}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("log line (-want +got):\n%s", diff)
	}
	all := e.logs.String()
	for _, secret := range []string{"ARGUMENT-MARKER-91", "recorded " + id.(string), "sk-live-7d1e40c2secret", "TOOLPLUGIN_LOG", "TAGGER_API_KEY"} {
		if strings.Contains(all, secret) {
			t.Errorf("the logs contain %q:\n%s", secret, all)
		}
	}
}

func TestSessionMustBelongToALiveRun(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	other := e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.KanbanTask), RunID: "run-elsewhere", SessionID: "call-1",
		Live: toolserver.Detached(nil), Catalog: e.svc.Catalog()})
	mustFail(t, connect(t, other, false).call(t, "kitsoki_agent_tagger_record", nil),
		"this MCP session's run run-elsewhere is not a live run of this kitsoki process")
	unbound := e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.KanbanTask), RunID: testRun,
		Live: toolserver.Detached(nil), Catalog: e.svc.Catalog()})
	mustFail(t, connect(t, unbound, false).call(t, "kitsoki_agent_tagger_record", nil),
		"this MCP session is not bound to a run; plugin tools act on the run of a live agent call")
	if evs := pluginEvents(t, log); len(evs) != 0 {
		t.Errorf("the plugin received %v", evs)
	}
}

func TestSurfaceIsCheckedAtInvocation(t *testing.T) {
	// An office session holding a snapshot in which the tool is offered to
	// kanban-task only: if the client calls it anyway (the session only
	// filters what it lists), kitsoki refuses.
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	var handler = e.svc.Catalog().Current().Tools[0]
	office := e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.OfficeTask), RunID: testRun, SessionID: "call-1",
		Live: toolserver.Detached(nil), PluginTools: func(toolserver.Surface) []toolserver.Tool { return []toolserver.Tool{handler.Tool} }})
	mustFail(t, connect(t, office, false).call(t, "kitsoki_agent_tagger_record", nil),
		"tool kitsoki_agent_tagger_record is not available on the office-task surface (it targets kanban-task)")
	if evs := pluginEvents(t, log); len(evs) != 0 {
		t.Errorf("the plugin received %v", evs)
	}
}

func TestSpawnFailureErrorsThePlugin(t *testing.T) {
	needPlugins(t)
	d := subprocessDecl("agent.gone", t.TempDir()+"/no-such-plugin", nil, decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.gone": d}, Options{RespawnDelay: time.Hour})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), true)
	mustFail(t, tc.call(t, "kitsoki_agent_gone_record", nil), "plugin agent.gone failed during record and the call is not retried: subprocess agent: spawn")
	mcptest.ExpectChanged(t, tc.Changed, 1)
	st := e.svc.PluginStatus()[0]
	if st.State != StateErrored || !strings.Contains(st.Detail, "no-such-plugin") {
		t.Errorf("status %+v, want errored with the spawn error", st)
	}
	tc.refused(t, "kitsoki_agent_gone_record", nil, "plugin agent.gone is not available: its process crashed and has not restarted yet")
}

// standIn is an agent that is not a subprocess plugin (a cassette replay).
type standIn struct{}

func (standIn) Ask(context.Context, *agent.Call) (*agent.AskResponse, error) { return nil, nil }
func (standIn) Close() error                                                 { return nil }

func TestReplacedAgentLeavesPluginErrored(t *testing.T) {
	needPlugins(t)
	d := subprocessDecl("agent.tagger", toolBin, nil, decl("record", kanbanOnly, anyObject, ""))
	reg := agent.NewRegistry(nil)
	reg.Configure(map[string]agent.Declaration{"agent.tagger": d})
	reg.Register("agent.tagger", standIn{})
	svc, err := New(map[string]agent.Declaration{"agent.tagger": d}, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	st := svc.PluginStatus()[0]
	if st.State != StateErrored || !strings.Contains(st.Detail, "serves no tools") {
		t.Errorf("status %+v", st)
	}
	if n := len(svc.Catalog().Current().Tools); n != 0 {
		t.Errorf("the catalog has %d tools", n)
	}
}

func TestDefaults(t *testing.T) {
	svc, err := New(nil, Options{Registry: agent.NewRegistry(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if svc.opts.Timeout != 30*time.Second || agent.ToolCallTimeout != 30*time.Second {
		t.Errorf("the call deadline is %s, want 30s", svc.opts.Timeout)
	}
	if snap := svc.Catalog().Current(); snap.Revision != 1 || len(snap.Tools) != 0 {
		t.Errorf("the first catalog is revision %d with %d tools, want an empty revision 1", snap.Revision, len(snap.Tools))
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New without a registry succeeded")
	}
}
