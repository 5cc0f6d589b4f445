package plugintools

// One test per scenario of the plugin-agent-tools seed (read with
// mcp-surfaces.md's names), each driven through a real mcp-go client
// against kitsoki's MCP server and a real plugin process.

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// The echo tool as stories declare it for the example plugin.
const (
	echoInput  = `{"type":"object","properties":{"message":{"type":"string","minLength":1},"shout":{"type":"boolean"}},"required":["message"],"additionalProperties":false}`
	echoOutput = `{"type":"object","properties":{"message":{"type":"string"},"invocation_id":{"type":"string"},"task_id":{"type":"string"},"session_id":{"type":"string"},"workspace_id":{"type":"string"},"surface":{"type":"string"}},"required":["message","task_id","session_id","workspace_id","surface"]}`
	echoName   = "kitsoki_agent_echo_echo"
)

func echoPlugin(enabled bool) agent.Declaration {
	td := decl("echo", kanbanOnly, echoInput, echoOutput)
	td.Description = "Echo a message back with the run and session kitsoki bound to the call."
	td.Annotations = agent.ToolAnnotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false}
	d := subprocessDecl("agent.echo", echoBin, nil, td)
	d.Enabled = enabled
	return d
}

func hint(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// Scenario: GIVEN an active plugin declaring a valid Kanban tool, WHEN a
// Kanban task agent initializes MCP, THEN tools/list includes the derived
// tool name, description, schemas, and conservative or declared
// annotations.
func TestScenarioKanbanAgentListsPluginTool(t *testing.T) {
	needPlugins(t)
	plain, _ := toolPlugin(t, "agent.Tag-Bot", "", decl("record", kanbanOnly, `{"type":"object","properties":{"tag_id":{"type":"string"}}}`, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.echo": echoPlugin(true), "agent.Tag-Bot": plain}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
	tools := tc.tools(t)

	echo, ok := tools[echoName]
	if !ok {
		t.Fatalf("tools/list lacks %s: %v", echoName, tc.pluginToolNames(t))
	}
	if echo.Description != "Echo a message back with the run and session kitsoki bound to the call." {
		t.Errorf("description = %q", echo.Description)
	}
	b, _ := json.Marshal(echo)
	var listed struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	json.Unmarshal(b, &listed)
	for _, c := range []struct{ name, got, want string }{{"inputSchema", string(listed.InputSchema), echoInput}, {"outputSchema", string(listed.OutputSchema), echoOutput}} {
		var got, want any
		json.Unmarshal([]byte(c.got), &got)
		json.Unmarshal([]byte(c.want), &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from the declaration (-want +got):\n%s", c.name, diff)
		}
	}
	type hints struct{ ReadOnly, Destructive, Idempotent, OpenWorld any }
	got := func(a mcp.ToolAnnotation) hints {
		return hints{hint(a.ReadOnlyHint), hint(a.DestructiveHint), hint(a.IdempotentHint), hint(a.OpenWorldHint)}
	}
	if diff := cmp.Diff(hints{true, false, true, false}, got(echo.Annotations)); diff != "" {
		t.Errorf("declared annotations (-want +got):\n%s", diff)
	}
	// An alias with capitals and punctuation gives a lowercase slug.
	rec, ok := tools["kitsoki_agent_tag_bot_record"]
	if !ok {
		t.Fatalf("tools/list lacks kitsoki_agent_tag_bot_record: %v", tc.pluginToolNames(t))
	}
	if diff := cmp.Diff(hints{false, true, false, true}, got(rec.Annotations)); diff != "" {
		t.Errorf("omitted annotations must take the conservative defaults (-want +got):\n%s", diff)
	}
}

// Scenario: GIVEN the same plugin tool targets only kanban-task, WHEN an
// Office, Configuration, or External MCP client lists tools, THEN that
// tool is not present.
func TestScenarioOtherSurfacesDoNotListKanbanTool(t *testing.T) {
	e := newEnv(t, map[string]agent.Declaration{"agent.echo": echoPlugin(true)}, Options{})
	sessions := map[string]*toolserver.Session{
		"office-task": e.session(t, toolserver.OfficeTask, "call-office"),
		// Even attached to the catalog, an outside surface gets no plugin
		// tools (the plugin-tools group is enabled on live surfaces only).
		"configuration": e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.Configuration), Catalog: e.svc.Catalog()}),
		"external":      e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.External), Catalog: e.svc.Catalog()}),
		// The outside surface as `kitsoki run --control-mcp` serves it.
		"control": e.outside(t, mcpserve.Config{Profile: profile(t, toolserver.Configuration), Root: t.TempDir(), Plugins: e.svc}),
	}
	for name, s := range sessions {
		t.Run(name, func(t *testing.T) {
			tc := connect(t, s, false)
			if got := tc.pluginToolNames(t); len(got) != 0 {
				t.Errorf("the %s surface lists %v", name, got)
			}
			// Calling it by name does not reach the plugin either.
			tc.refused(t, echoName, map[string]any{"message": "hi"}, echoName)
		})
	}
	// The kanban session does list it (the tool is real).
	if got := connect(t, e.session(t, toolserver.KanbanTask, "call-k"), false).pluginToolNames(t); !cmp.Equal(got, []string{echoName}) {
		t.Errorf("kanban lists %v, want [%s]", got, echoName)
	}
}

// Scenario: GIVEN a running compatible task agent, WHEN an operator
// enables a plugin with a matching tool, THEN the MCP connection receives
// one tools/list_changed notification and the next tools/list includes it
// without restarting the agent process. The operator uses the
// configuration-surface tool, as a client of the same kitsoki process.
func TestScenarioEnablingPluginNotifiesOnce(t *testing.T) {
	e := newEnv(t, map[string]agent.Declaration{"agent.echo": echoPlugin(false)}, Options{})
	agentSession := e.session(t, toolserver.KanbanTask, "call-1")
	tc := connect(t, agentSession, true)
	if got := tc.pluginToolNames(t); len(got) != 0 {
		t.Fatalf("a plugin declared enabled: false contributes %v", got)
	}
	rev := agentSession.AppliedCatalog().Revision

	operator := connect(t, e.outside(t, mcpserve.Config{Profile: profile(t, toolserver.Configuration), Root: t.TempDir(), Plugins: e.svc}), false)
	res := operator.call(t, mcpserve.ToolSetPluginEnabled, map[string]any{"alias": "agent.echo", "enabled": true})
	if res.IsError {
		t.Fatalf("enable: %s", mcptest.Text(res))
	}
	if diff := cmp.Diff(map[string]any{"alias": "agent.echo", "state": "active", "tools": []any{echoName}}, mcptest.Structured(t, res)); diff != "" {
		t.Errorf("enable answered (-want +got):\n%s", diff)
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)
	if got := tc.pluginToolNames(t); !cmp.Equal(got, []string{echoName}) {
		t.Errorf("after enabling, tools/list has %v", got)
	}
	if agentSession.Closed() {
		t.Error("the agent's session was closed")
	}
	if got := agentSession.AppliedCatalog().Revision; got != rev+1 {
		t.Errorf("the session applied revision %d, want %d", got, rev+1)
	}
	// The same connection calls it.
	if res := tc.call(t, echoName, map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("call after enabling: %s", mcptest.Text(res))
	}
	status := operator.call(t, mcpserve.ToolPluginStatus, nil)
	if diff := cmp.Diff(map[string]any{"plugins": []any{map[string]any{"alias": "agent.echo", "state": "active", "tools": []any{echoName}}}}, mcptest.Structured(t, status)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	mustFail(t, operator.call(t, mcpserve.ToolSetPluginEnabled, map[string]any{"alias": "agent.nope", "enabled": true}),
		`no plugin "agent.nope" contributes agent tools (plugins with agent_tools: agent.echo)`)
}

// Scenario: GIVEN a running task agent has discovered a plugin tool, WHEN
// the plugin is disabled before invocation, THEN the call fails without
// entering the plugin and the refreshed list excludes the tool.
func TestScenarioDisabledBeforeInvocation(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	s := e.session(t, toolserver.KanbanTask, "call-1")
	tc := connect(t, s, true)
	// A second session that still holds the old snapshot: a client whose
	// discovery is stale. Only kitsoki's own revalidation stops it.
	stale := e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.KanbanTask), RunID: testRun, SessionID: "call-stale",
		WorkspaceID: testWorkspace, Live: toolserver.Detached(nil)})
	stale.ApplyCatalog(e.svc.Catalog().Current())
	sc := connect(t, stale, false)
	const name = "kitsoki_agent_tagger_record"
	if got := tc.pluginToolNames(t); !cmp.Equal(got, []string{name}) {
		t.Fatalf("discovered %v", got)
	}

	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.tagger", false); err != nil {
		t.Fatal(err)
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)
	tc.refused(t, name, map[string]any{}, name)
	mustFail(t, sc.call(t, name, map[string]any{}), "plugin agent.tagger is disabled; its tool record is not available")
	if evs := pluginEvents(t, log); len(evs) != 0 {
		t.Errorf("the plugin received %v", evs)
	}
	if got := tc.pluginToolNames(t); len(got) != 0 {
		t.Errorf("the refreshed list still has %v", got)
	}
	if got := e.logs.records("plugin tool call"); len(got) != 1 || got[0]["outcome"] != OutcomeRefused {
		t.Errorf("logged calls %v, want one refused", got)
	}
}

// Scenario: GIVEN a valid call, WHEN the plugin executes it, THEN the
// plugin receives the exact arguments plus the kitsoki-bound invocation,
// task, session, workspace and surface context, and the agent receives
// fallback text and any valid structured content.
func TestScenarioValidCall(t *testing.T) {
	input := `{"type":"object","properties":{"tag_id":{"type":"string"},"weight":{"type":"number"},"labels":{"type":"array"}},"required":["tag_id"]}`
	output := `{"type":"object","required":["invocation_id","task_id"]}`
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", bothTasks, input, output))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d, "agent.echo": echoPlugin(true)}, Options{})

	for _, surface := range []toolserver.Surface{toolserver.KanbanTask, toolserver.OfficeTask} {
		t.Run(string(surface), func(t *testing.T) {
			callID := "call-" + string(surface)
			tc := connect(t, e.session(t, surface, callID), false)
			args := map[string]any{"tag_id": "urgent", "weight": 2.5, "labels": []any{"a", map[string]any{"nested": true}}}
			res := tc.call(t, "kitsoki_agent_tagger_record", args)
			if res.IsError {
				t.Fatalf("call failed: %s", mcptest.Text(res))
			}
			sc := mcptest.Structured(t, res)
			id, _ := sc["invocation_id"].(string)
			if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
				t.Errorf("invocation id %q, want 16 hex digits", id)
			}
			if mcptest.Text(res) != "recorded "+id {
				t.Errorf("text = %q, want the plugin's fallback text", mcptest.Text(res))
			}
			want := map[string]any{"arguments": args, "invocation_id": id, "task_id": testRun, "session_id": callID,
				"workspace_id": testWorkspace, "surface": string(surface)}
			if diff := cmp.Diff(want, sc); diff != "" {
				t.Errorf("structured content (-want +got):\n%s", diff)
			}
			var got map[string]any
			for _, ev := range eventsOf(pluginEvents(t, log), "invoke") {
				if ev["invocation_id"] == id {
					got = ev
				}
			}
			wantEv := map[string]any{"event": "invoke", "name": "record", "invocation_id": id, "arguments": args,
				"context": map[string]any{"task_id": testRun, "session_id": callID, "workspace_id": testWorkspace, "surface": string(surface)}}
			if diff := cmp.Diff(wantEv, got); diff != "" {
				t.Errorf("what the plugin received (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("example plugin", func(t *testing.T) {
		tc := connect(t, e.session(t, toolserver.KanbanTask, "call-echo"), false)
		res := tc.call(t, echoName, map[string]any{"message": "hello", "shout": true})
		if res.IsError {
			t.Fatalf("echo failed: %s", mcptest.Text(res))
		}
		if want := "echo: HELLO (run " + testRun + ", session call-echo, kanban-task)"; mcptest.Text(res) != want {
			t.Errorf("text = %q, want %q", mcptest.Text(res), want)
		}
		sc := mcptest.Structured(t, res)
		delete(sc, "invocation_id")
		want := map[string]any{"message": "HELLO", "task_id": testRun, "session_id": "call-echo", "workspace_id": testWorkspace, "surface": "kanban-task"}
		if diff := cmp.Diff(want, sc); diff != "" {
			t.Errorf("structured content (-want +got):\n%s", diff)
		}
	})
}

// Scenario: GIVEN an agent supplies another task or session ID as ordinary
// tool arguments, WHEN it invokes the tool, THEN those values do not
// replace the context bound by kitsoki.
func TestScenarioArgumentsCannotReplaceContext(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
	args := map[string]any{
		"task_id": "someone-elses-run", "session_id": "call-999", "workspace_id": "other", "surface": "configuration",
		"invocation_id": "forged", "context": map[string]any{"task_id": "someone-elses-run"},
	}
	res := tc.call(t, "kitsoki_agent_tagger_record", args)
	if res.IsError {
		t.Fatal(mcptest.Text(res))
	}
	evs := eventsOf(pluginEvents(t, log), "invoke")
	if len(evs) != 1 {
		t.Fatalf("plugin got %d calls, want 1", len(evs))
	}
	wantCtx := map[string]any{"task_id": testRun, "session_id": "call-1", "workspace_id": testWorkspace, "surface": "kanban-task"}
	if diff := cmp.Diff(wantCtx, evs[0]["context"]); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
	if evs[0]["invocation_id"] == "forged" {
		t.Error("the invocation id came from the arguments")
	}
	if diff := cmp.Diff(args, evs[0]["arguments"]); diff != "" {
		t.Errorf("the arguments are passed on untouched, as arguments (-want +got):\n%s", diff)
	}
}

// Scenario: GIVEN invalid arguments, WHEN the agent invokes a plugin
// tool, THEN kitsoki returns a schema-validation error and the plugin
// receives no RPC.
func TestScenarioInvalidArgumentsNeverReachPlugin(t *testing.T) {
	input := `{"type":"object","properties":{"tag_id":{"type":"string"},"count":{"type":"integer","maximum":10}},"required":["tag_id"],"additionalProperties":false}`
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, input, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), false)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "schema validation failed: the arguments of kitsoki_agent_tagger_record do not match its input schema: /: required: missing property 'tag_id'"},
		{map[string]any{"tag_id": 7}, "/tag_id: type: got number, want string"},
		{map[string]any{"tag_id": "a", "count": 11}, "/count: maximum: got 11, want 10"},
		{map[string]any{"tag_id": "a", "extra": true}, "additional properties 'extra' not allowed"},
	}
	for _, c := range cases {
		mustFail(t, tc.call(t, "kitsoki_agent_tagger_record", c.args), c.want)
	}
	if evs := pluginEvents(t, log); len(evs) != 0 {
		t.Errorf("the plugin received %v", evs)
	}
	for _, r := range e.logs.records("plugin tool call") {
		if r["outcome"] != OutcomeInvalidArgs {
			t.Errorf("outcome %v, want %s", r["outcome"], OutcomeInvalidArgs)
		}
	}
}

// Scenario: GIVEN a plugin call times out or its process crashes, WHEN the
// request completes, THEN the agent receives one MCP error and kitsoki
// does not retry the call.
func TestScenarioTimeoutOrCrashIsOneErrorNoRetry(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("wait", kanbanOnly, anyObject, ""), decl("crash", kanbanOnly, anyObject, ""), decl("record", kanbanOnly, anyObject, ""))
	// The call deadline is measured on a fake clock: the wait call times out
	// when the test moves the clock, and the other calls, however slowly a
	// loaded machine runs the plugin, never reach it.
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{Timeout: 300 * time.Millisecond, RespawnDelay: 50 * time.Millisecond, Clock: clk})
	s := e.session(t, toolserver.KanbanTask, "call-1")
	tc := connect(t, s, true)

	t.Run("timeout", func(t *testing.T) {
		done := waitCall(t, tc, log)
		clk.Advance(300 * time.Millisecond)
		if got, want := <-done, "plugin agent.tagger did not answer wait within 300ms; the call was cancelled and is not retried"; !strings.Contains(got, want) {
			t.Errorf("wait: %q, want it to contain %q", got, want)
		}
		eventually(t, "the plugin sees the cancellation", func() bool { return len(eventsOf(pluginEvents(t, log), "cancelled")) == 1 })
		if n := len(eventsOf(pluginEvents(t, log), "invoke")); n != 1 {
			t.Errorf("the plugin was called %d times, want once", n)
		}
		// The process is kept: the next call is answered.
		if res := tc.call(t, "kitsoki_agent_tagger_record", nil); res.IsError {
			t.Errorf("after a timeout: %s", mcptest.Text(res))
		}
		mcptest.ExpectChanged(t, tc.Changed, 0)
	})

	t.Run("crash", func(t *testing.T) {
		before := len(eventsOf(pluginEvents(t, log), "invoke"))
		res := tc.call(t, "kitsoki_agent_tagger_crash", nil)
		mustFail(t, res, "plugin agent.tagger failed during crash and the call is not retried: subprocess agent: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: \"toolplugin: crashing on purpose\\n\"")
		if n := len(eventsOf(pluginEvents(t, log), "invoke")) - before; n != 1 {
			t.Errorf("the plugin was called %d times for one crash call, want once", n)
		}
		// Errored until respawned: the tools leave, then come back.
		mcptest.ExpectChanged(t, tc.Changed, 2)
		if got := tc.pluginToolNames(t); len(got) != 3 {
			t.Errorf("after recovery the list has %v", got)
		}
		if res := tc.call(t, "kitsoki_agent_tagger_record", nil); res.IsError {
			t.Errorf("after recovery: %s", mcptest.Text(res))
		}
	})
}

// Scenario: GIVEN two catalog snapshots arrive out of order, WHEN a
// session has already applied the newer revision from the same
// generation, THEN it ignores the older snapshot and does not restore
// removed tools.
func TestScenarioOutOfOrderSnapshots(t *testing.T) {
	e := newEnv(t, map[string]agent.Declaration{"agent.echo": echoPlugin(true)}, Options{})
	older := e.svc.Catalog().Current()
	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.echo", false); err != nil {
		t.Fatal(err)
	}
	newer := e.svc.Catalog().Current()
	if older.Generation != newer.Generation || newer.Revision <= older.Revision {
		t.Fatalf("snapshots %s/%d and %s/%d", older.Generation, older.Revision, newer.Generation, newer.Revision)
	}
	// A session that receives the snapshots itself, newer first.
	s := e.open(t, toolserver.SessionConfig{Profile: profile(t, toolserver.KanbanTask), RunID: testRun, SessionID: "call-1",
		WorkspaceID: testWorkspace, Live: toolserver.Detached(nil)})
	tc := connect(t, s, true)
	if !s.ApplyCatalog(newer) {
		t.Fatal("the newer snapshot was not applied")
	}
	if s.ApplyCatalog(older) {
		t.Error("the older snapshot was applied after the newer one")
	}
	mcptest.ExpectChanged(t, tc.Changed, 0)
	if got := tc.pluginToolNames(t); len(got) != 0 {
		t.Errorf("the older snapshot restored %v", got)
	}
	// The attached sessions got the same protection: redelivering the
	// older snapshot to one changes nothing.
	attached := e.session(t, toolserver.KanbanTask, "call-2")
	ac := connect(t, attached, true)
	if attached.ApplyCatalog(older) {
		t.Error("an attached session applied an older snapshot")
	}
	mcptest.ExpectChanged(t, ac.Changed, 0)
	if got := ac.pluginToolNames(t); len(got) != 0 {
		t.Errorf("attached session restored %v", got)
	}
}

// Scenario: GIVEN a client ignores tools/list_changed, WHEN the plugin
// catalog changes, THEN kitsoki keeps the agent running and invocation
// still enforces the current catalog; reconnecting exposes the current
// list.
func TestScenarioClientIgnoringListChanged(t *testing.T) {
	e := newEnv(t, map[string]agent.Declaration{"agent.echo": echoPlugin(true)}, Options{})
	s := e.session(t, toolserver.KanbanTask, "call-1")
	deaf := connect(t, s, false)
	if got := deaf.pluginToolNames(t); !cmp.Equal(got, []string{echoName}) {
		t.Fatalf("discovered %v", got)
	}
	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.echo", false); err != nil {
		t.Fatal(err)
	}
	deaf.refused(t, echoName, map[string]any{"message": "hi"}, echoName)
	if s.Closed() {
		t.Fatal("the session was closed by a catalog change")
	}
	again := connect(t, s, false) // the reconnect
	if got := again.pluginToolNames(t); len(got) != 0 {
		t.Errorf("after reconnecting the list has %v", got)
	}
	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.echo", true); err != nil {
		t.Fatal(err)
	}
	if res := deaf.call(t, echoName, map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("the same client calls the re-enabled tool: %s", mcptest.Text(res))
	}
}
