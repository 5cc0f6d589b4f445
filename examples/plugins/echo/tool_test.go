package echo_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/agents/transports"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/plugintools"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

func TestEchoTool(t *testing.T) {
	req := &plugin.AgentToolRequest{InvocationID: "inv-1", Name: echo.ToolName, Arguments: map[string]any{"message": "hi", "shout": true},
		Context: plugin.AgentToolContext{TaskID: "run-1", SessionID: "call-1", WorkspaceID: "ws", Surface: "kanban-task"}}
	res, err := echo.Agent{}.InvokeAgentTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &plugin.AgentToolResult{Text: "echo: HI (run run-1, session call-1, kanban-task)", StructuredContent: map[string]any{
		"message": "HI", "invocation_id": "inv-1", "task_id": "run-1", "session_id": "call-1", "workspace_id": "ws", "surface": "kanban-task"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req.Arguments["sleep_ms"] = 60000.0
	if _, err := (echo.Agent{}).InvokeAgentTool(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait returned %v", err)
	}
	req.Name = "other"
	var pe *plugin.Error
	if _, err := (echo.Agent{}).InvokeAgentTool(context.Background(), req); !errors.As(err, &pe) || pe.Code != plugin.CodeInvalidParams {
		t.Errorf("an unknown tool returned %v", err)
	}
}

// TestToolStoryServesTheEchoTool loads stories/plugin-tools-go as kitsoki
// run does and calls the tool it declares through a real MCP client, the
// way the story's task agent would, against the built example plugin.
func TestToolStoryServesTheEchoTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example plugin")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not in PATH")
	}
	root, tree := repoRoot(t), t.TempDir()
	build(t, gobin, filepath.Join(tree, "bin", "echo-go"), "examples/plugins/echo-go")
	testkit.CopyInto(t, filepath.Join(root, "stories", "plugin-tools-go"), filepath.Join(tree, "stories", "plugin-tools-go"))
	st, err := story.Load(filepath.Join(tree, "stories", "plugin-tools-go", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	reg := agent.NewRegistry(nil)
	transports.Register(reg, nil)
	reg.Configure(st.Plugins)
	defer reg.Close()
	svc, err := plugintools.New(st.Plugins, plugintools.Options{Registry: reg, RunLive: func(id string) bool { return id == "run-1" }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv, err := toolserver.ListenHTTP("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, _ := toolserver.NewProfile(toolserver.KanbanTask, nil, nil)
	sess, err := srv.Open(toolserver.SessionConfig{Profile: p, RunID: "run-1", SessionID: "call-1", WorkspaceID: st.App.ID,
		Live: toolserver.Detached(nil), Catalog: svc.Catalog()})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.NewStreamableHttpClient(sess.URL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + sess.Token()}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	var call mcp.CallToolRequest
	call.Params.Name = "kitsoki_agent_echo_echo"
	call.Params.Arguments = map[string]any{"message": "hello", "shout": true, "task_id": "forged"}
	res, err := c.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	// The story's schema forbids extra properties: the forged task_id is
	// refused before the plugin is called.
	if !res.IsError {
		t.Fatalf("a call with an undeclared argument succeeded: %+v", res)
	}
	call.Params.Arguments = map[string]any{"message": "hello", "shout": true}
	if res, err = c.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	text, _ := mcp.AsTextContent(res.Content[0])
	if want := "echo: HELLO (run run-1, session call-1, kanban-task)"; text.Text != want {
		t.Errorf("text = %q, want %q", text.Text, want)
	}
}
