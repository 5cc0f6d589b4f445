package echo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/plugin"
)

// ToolName is the one agent tool the echo plugin serves. A story declares
// it under the plugin's agent_tools: (see stories/plugin-tools-go), and an
// agent sees it as kitsoki_<plugin-slug>_echo.
const ToolName = "echo"

// InvokeAgentTool serves the echo tool: it answers with the message it was
// given, upper-cased when "shout" is true, and the context kitsoki bound
// to the call (run, session, workspace, surface, invocation id), as text
// and as structured content. "sleep_ms" delays the answer; the call's
// context (cancelled by kitsoki's $/cancelRequest) cuts the wait short.
func (Agent) InvokeAgentTool(ctx context.Context, req *plugin.AgentToolRequest) (*plugin.AgentToolResult, error) {
	if req.Name != ToolName {
		return nil, &plugin.Error{Code: plugin.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q (this plugin serves %q)", req.Name, ToolName)}
	}
	if ms, ok := number(req.Arguments["sleep_ms"]); ok && ms > 0 {
		t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	msg, _ := req.Arguments["message"].(string)
	if shout, _ := req.Arguments["shout"].(bool); shout {
		msg = strings.ToUpper(msg)
	}
	c := req.Context
	return &plugin.AgentToolResult{
		Text: fmt.Sprintf("echo: %s (run %s, session %s, %s)", msg, c.TaskID, c.SessionID, c.Surface),
		StructuredContent: map[string]any{
			"message":       msg,
			"invocation_id": req.InvocationID,
			"task_id":       c.TaskID,
			"session_id":    c.SessionID,
			"workspace_id":  c.WorkspaceID,
			"surface":       c.Surface,
		},
	}, nil
}
