package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"runtime/debug"
)

// JSON-RPC methods of agent tools.
const (
	// MethodAgentToolInvoke is kitsoki's call of one declared agent tool,
	// sent on the plugin's existing process. Params: AgentToolRequest;
	// result: AgentToolResult.
	MethodAgentToolInvoke = "agent_tool.invoke"
	// MethodCancelRequest is the notification kitsoki sends when it stops
	// waiting for a call (the agent's call ended, the 30 s deadline
	// passed, the plugin was disabled): params {"id": <the request's id>}.
	// Serve cancels that call's context.
	MethodCancelRequest = "$/cancelRequest"
)

// AgentToolRequest is one invocation of a tool the plugin declared under
// agent_tools:. Arguments have been validated against the tool's
// input_schema. Context is bound by kitsoki from the agent's session; the
// agent cannot choose it through Arguments.
type AgentToolRequest struct {
	InvocationID string           `json:"invocation_id"`
	Name         string           `json:"name"` // the plugin-local tool name
	Arguments    map[string]any   `json:"arguments"`
	Context      AgentToolContext `json:"context"`
}

// AgentToolContext identifies where a tool call comes from.
type AgentToolContext struct {
	// TaskID is the run the calling agent works in.
	TaskID string `json:"task_id"`
	// SessionID is the agent call's MCP session.
	SessionID string `json:"session_id"`
	// WorkspaceID is the story's app id.
	WorkspaceID string `json:"workspace_id"`
	// Surface is kanban-task or office-task.
	Surface string `json:"surface"`
}

// AgentToolResult is a tool's answer. Text is required: it is what an
// agent that reads no structured content sees. StructuredContent must
// match the tool's output_schema when one is declared. Text and
// structured content together may not exceed 1 MiB. IsError reports a
// failure the agent should read (a tool error, not a protocol error).
type AgentToolResult struct {
	Text              string         `json:"text"`
	StructuredContent map[string]any `json:"structured_content,omitempty"`
	IsError           bool           `json:"is_error"`
}

// AgentToolPlugin is the optional interface of an Agent that serves the
// agent tools its declaration lists. Serve checks for it: an Agent that
// does not implement it answers agent_tool.invoke with method not found
// (-32601), and kitsoki turns that into a tool error saying so.
//
// InvokeAgentTool may be called concurrently, also with Ask. ctx is
// cancelled when kitsoki stops waiting ($/cancelRequest) or the plugin is
// told to stop. Return an error for a failure kitsoki should report as
// the plugin's error; return a result with IsError for a failure the
// agent should read and act on.
type AgentToolPlugin interface {
	InvokeAgentTool(ctx context.Context, req *AgentToolRequest) (*AgentToolResult, error)
}

// UnimplementedAgentToolPlugin can be embedded in an Agent to satisfy
// AgentToolPlugin before any tool exists: its InvokeAgentTool answers
// method not found, exactly like an Agent without the method.
type UnimplementedAgentToolPlugin struct{}

// InvokeAgentTool answers method not found.
func (UnimplementedAgentToolPlugin) InvokeAgentTool(context.Context, *AgentToolRequest) (*AgentToolResult, error) {
	return nil, errToolsUnimplemented()
}

func errToolsUnimplemented() *Error {
	return &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found (this plugin serves no agent tools)", MethodAgentToolInvoke)}
}

// prepareTool decodes an agent_tool.invoke request's params and registers
// the call as cancellable under its id. It runs on the reading goroutine.
func (s *stdioServer) prepareTool(ctx context.Context, req *request, line []byte) {
	req.tool = cancellable[AgentToolRequest](ctx, s, req, line)
}

// cancellable decodes the params of a cancellable call (agent_tool.invoke,
// host.invoke) from line as a T, keeping why they did not decode on the
// request, and registers the call's context under its id so
// $/cancelRequest can cancel it.
func cancellable[T any](ctx context.Context, s *stdioServer, req *request, line []byte) *T {
	var env struct {
		Params *T `json:"params"`
	}
	req.paramsErr = json.Unmarshal(line, &env)
	req.toolCtx, req.cancel = context.WithCancel(ctx)
	req.key = string(bytes.TrimSpace(req.ID))
	s.callsMu.Lock()
	if s.calls == nil {
		s.calls = map[string]context.CancelFunc{}
	}
	s.calls[req.key] = req.cancel
	s.callsMu.Unlock()
	return env.Params
}

// settle forgets a cancellable call once it is answered.
func (s *stdioServer) settle(req *request) {
	if req.cancel == nil {
		return
	}
	s.callsMu.Lock()
	delete(s.calls, req.key)
	s.callsMu.Unlock()
	req.cancel()
}

// cancelCall handles a $/cancelRequest notification: the named call's
// context is cancelled. Unknown ids (answered already) are ignored.
func (s *stdioServer) cancelCall(line []byte) {
	var n struct {
		Params struct {
			ID json.RawMessage `json:"id"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || len(n.Params.ID) == 0 {
		return
	}
	s.callsMu.Lock()
	cancel := s.calls[string(bytes.TrimSpace(n.Params.ID))]
	s.callsMu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// invokeTool runs one agent_tool.invoke call; a panicking tool becomes an
// error response.
func (s *stdioServer) invokeTool(req *request) (res *AgentToolResult, err error) {
	tp, ok := s.agent.(AgentToolPlugin)
	switch {
	case !ok:
		return nil, errToolsUnimplemented()
	case req.paramsErr != nil:
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("%s: params are not an AgentToolRequest: %v", MethodAgentToolInvoke, req.paramsErr)}
	case req.tool == nil:
		return nil, &Error{Code: CodeInvalidParams, Message: MethodAgentToolInvoke + ": params are missing (want an AgentToolRequest object)"}
	}
	defer func() {
		if p := recover(); p != nil {
			log.Printf("kitsoki plugin: agent tool %q panicked: %v\n%s", req.tool.Name, p, debug.Stack())
			res, err = nil, &Error{Code: CodeAgentError, Message: fmt.Sprintf("agent tool %q panicked: %v", req.tool.Name, p)}
		}
	}()
	res, err = tp.InvokeAgentTool(req.toolCtx, req.tool)
	if err == nil && res == nil {
		return nil, &Error{Code: CodeAgentError, Message: fmt.Sprintf("agent tool %q returned neither a result nor an error", req.tool.Name)}
	}
	return res, err
}
