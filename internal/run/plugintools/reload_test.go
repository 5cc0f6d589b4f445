package plugintools

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// TestReloadRefusedKeepsPreviousTools reloads declarations that are
// invalid in several ways: nothing changes, no snapshot is published.
func TestReloadRefusedKeepsPreviousTools(t *testing.T) {
	d, _ := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), true)
	rev := e.svc.Catalog().Current().Revision

	bad := func(mutate func(*agent.Declaration)) map[string]agent.Declaration {
		nd := d
		nd.AgentTools = append([]agent.ToolDeclaration(nil), d.AgentTools...)
		mutate(&nd)
		return map[string]agent.Declaration{"agent.tagger": nd}
	}
	cases := []struct {
		name  string
		decls map[string]agent.Declaration
		want  string
	}{
		{"bad name", bad(func(d *agent.Declaration) { d.AgentTools[0].Name = "Record" }),
			`agent_plugins.agent.tagger.agent_tools[0]: tool name "Record" must match ^[a-z0-9][a-z0-9_]{0,31}$`},
		{"schema not an object", bad(func(d *agent.Declaration) { d.AgentTools[0].InputSchema = json.RawMessage(`{"type":"string"}`) }),
			"input_schema: the schema's root must be an object schema (type: object)"},
		{"schema does not compile", bad(func(d *agent.Declaration) {
			d.AgentTools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"wat"}}}`)
		}), "input_schema does not compile"},
		{"collision", map[string]agent.Declaration{
			"agent.tagger": d,
			"agent_tagger": subprocessDecl("agent_tagger", toolBin, nil, decl("record", kanbanOnly, anyObject, "")),
		}, `exposed tool name "kitsoki_agent_tagger_record" is also derived from agent_plugins.agent.tagger.agent_tools[0]`},
		{"mcp_http", map[string]agent.Declaration{"agent.remote": {Alias: "agent.remote", Plugin: agent.PluginMCPHTTP,
			Endpoint: "http://127.0.0.1:1/mcp", AgentTools: d.AgentTools}},
			"agent_plugins.agent.remote: mcp_http plugins cannot declare agent tools"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.svc.Reload(c.decls)
			if err == nil || !strings.Contains(err.Error(), "reload refused, the previous plugins and tools stay in force") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Reload error:\n  %v\nwant one containing:\n  %s", err, c.want)
			}
			mcptest.ExpectChanged(t, tc.Changed, 0)
			if got := e.svc.Catalog().Current().Revision; got != rev {
				t.Errorf("revision %d after a refused reload, want %d", got, rev)
			}
			if res := tc.call(t, "kitsoki_agent_tagger_record", nil); res.IsError {
				t.Errorf("the previous tool stopped working: %s", mcptest.Text(res))
			}
		})
	}
}

func TestReloadReplacesTools(t *testing.T) {
	d, log := toolPlugin(t, "agent.tagger", "", decl("record", kanbanOnly, anyObject, ""))
	echo := echoPlugin(true)
	e := newEnv(t, map[string]agent.Declaration{"agent.tagger": d, "agent.echo": echo}, Options{})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), true)
	if res := tc.call(t, "kitsoki_agent_tagger_record", nil); res.IsError {
		t.Fatal(mcptest.Text(res))
	}
	// Disabled live; the reload keeps that, since the declared enabled:
	// did not change.
	if _, err := e.svc.SetPluginEnabled(t.Context(), "agent.echo", false); err != nil {
		t.Fatal(err)
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)

	nd := d
	nd.AgentTools = []agent.ToolDeclaration{decl("record", kanbanOnly, anyObject, ""), decl("fail", kanbanOnly, anyObject, "")}
	if err := e.svc.Reload(map[string]agent.Declaration{"agent.tagger": nd, "agent.echo": echo}); err != nil {
		t.Fatal(err)
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)
	if diff := cmp.Diff([]string{"kitsoki_agent_tagger_fail", "kitsoki_agent_tagger_record"}, tc.pluginToolNames(t)); diff != "" {
		t.Errorf("after reload (-want +got):\n%s", diff)
	}
	if got := e.svc.PluginStatus(); got[0].Alias != "agent.echo" || got[0].State != StateDisabled {
		t.Errorf("status after reload %+v, want agent.echo still disabled", got)
	}
	// The changed plugin runs a new process: its log shows a second
	// process answering (the first was stopped by the reload).
	if res := tc.call(t, "kitsoki_agent_tagger_record", nil); res.IsError {
		t.Errorf("after reload: %s", mcptest.Text(res))
	}
	if n := len(eventsOf(pluginEvents(t, log), "invoke")); n != 2 {
		t.Errorf("the plugin got %d calls, want 2", n)
	}
	// Dropping the plugin withdraws its tools.
	if err := e.svc.Reload(map[string]agent.Declaration{"agent.echo": echo}); err != nil {
		t.Fatal(err)
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)
	if got := tc.pluginToolNames(t); len(got) != 0 {
		t.Errorf("after dropping the plugin: %v", got)
	}
}

// TestReloadKeepsAnErroredPluginErrored: an unchanged declaration keeps
// its agent, so a plugin whose process is down stays errored.
func TestReloadKeepsAnErroredPluginErrored(t *testing.T) {
	needPlugins(t)
	d := subprocessDecl("agent.gone", t.TempDir()+"/no-such-plugin", nil, decl("record", kanbanOnly, anyObject, ""))
	decls := map[string]agent.Declaration{"agent.gone": d}
	e := newEnv(t, decls, Options{RespawnDelay: time.Hour})
	tc := connect(t, e.session(t, toolserver.KanbanTask, "call-1"), true)
	tc.call(t, "kitsoki_agent_gone_record", nil) // the spawn fails: errored
	mcptest.ExpectChanged(t, tc.Changed, 1)
	if err := e.svc.Reload(decls); err != nil {
		t.Fatal(err)
	}
	mcptest.ExpectChanged(t, tc.Changed, 0)
	if st := e.svc.PluginStatus()[0]; st.State != StateErrored {
		t.Errorf("after reload the plugin is %s, want errored", st.State)
	}
}
