package plugintools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/plugin"
)

// Outcomes of a tool call, as logged.
const (
	OutcomeOK            = "ok"         // the plugin answered
	OutcomeToolError     = "tool_error" // the plugin answered is_error
	OutcomeRefused       = "refused"    // a pre-check failed; no RPC
	OutcomeInvalidArgs   = "invalid_arguments"
	OutcomeInvalidResult = "invalid_result" // text missing, output schema, size
	OutcomeTimeout       = "timeout"
	OutcomeCancelled     = "cancelled"
	OutcomeCrashed       = "crashed"
	OutcomeUnimplemented = "unimplemented"
	OutcomeRPCError      = "rpc_error"
)

// call is one invocation being handled, with what its log line needs.
type call struct {
	id      string
	alias   string
	name    string
	task    string
	session string
	outcome string
}

// handler returns the MCP handler of plugin alias's tool name. It is shared
// by every session the catalog reaches; the session it runs for is read
// from ctx, and everything is checked again against the service's current
// state, so a client holding a stale list cannot reach a withdrawn tool.
func (s *Service) handler(alias, name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := &call{id: newInvocationID(), alias: alias, name: name}
		start := s.opts.Clock.Now()
		res := s.invoke(ctx, c, req)
		s.logger.Info("plugin tool call",
			"invocation_id", c.id, "plugin", alias, "tool", name,
			"task_id", c.task, "session_id", c.session,
			"duration", s.opts.Clock.Now().Sub(start), "outcome", c.outcome)
		return res, nil
	}
}

// invoke checks the call, sends it, and checks the answer. Every failure
// is a tool error the agent can read; none is retried.
func (s *Service) invoke(ctx context.Context, c *call, req mcp.CallToolRequest) *mcp.CallToolResult {
	sess := toolserver.SessionFrom(ctx)
	if sess != nil {
		c.task, c.session = sess.RunID(), sess.SessionID()
	}
	s.mu.Lock()
	p, ok := s.plugins[c.alias]
	var (
		t       *tool
		proc    Process
		refusal string
	)
	switch {
	case !ok || s.closed:
		refusal = fmt.Sprintf("plugin %s is no longer loaded; its tools are not available", c.alias)
	case p.state() == StateDisabled:
		refusal = fmt.Sprintf("plugin %s is disabled; its tool %s is not available", c.alias, c.name)
	case p.state() == StateErrored:
		refusal = fmt.Sprintf("plugin %s is not available: its process crashed and has not restarted yet", c.alias)
	default:
		if t = p.tools[c.name]; t == nil {
			refusal = fmt.Sprintf("plugin %s declares no tool %s", c.alias, c.name)
		}
		proc = p.proc
	}
	s.mu.Unlock()
	if refusal == "" {
		refusal = s.checkSession(sess, t)
	}
	if refusal != "" {
		c.outcome = OutcomeRefused
		return mcp.NewToolResultError(refusal)
	}
	args, raw, err := arguments(req)
	if err == nil {
		_, err = t.input.ValidateJSON(raw)
	}
	if err != nil {
		c.outcome = OutcomeInvalidArgs
		return mcp.NewToolResultError(fmt.Sprintf("schema validation failed: the arguments of %s do not match its input schema: %v", t.exposed, err))
	}
	out, err := s.send(ctx, c, proc, &plugin.AgentToolRequest{
		InvocationID: c.id,
		Name:         c.name,
		Arguments:    args,
		Context: plugin.AgentToolContext{
			TaskID:      sess.RunID(),
			SessionID:   sess.SessionID(),
			WorkspaceID: sess.WorkspaceID(),
			Surface:     string(sess.Profile().Surface),
		},
	})
	if err != nil {
		return mcp.NewToolResultError(err.Error())
	}
	return s.result(c, t, out)
}

// checkSession refuses a call whose session is not a live agent session
// of this process bound to a live run, or whose surface the tool does not
// target.
func (s *Service) checkSession(sess *toolserver.Session, t *tool) string {
	switch {
	case sess == nil || sess.Closed():
		return "this MCP session has ended; plugin tools are only available to a live agent call"
	case !slices.Contains(t.surfaces, sess.Profile().Surface):
		return fmt.Sprintf("tool %s is not available on the %s surface (it targets %s)", t.exposed, sess.Profile().Surface, surfaceList(t.surfaces))
	case sess.RunID() == "" || sess.SessionID() == "":
		return "this MCP session is not bound to a run; plugin tools act on the run of a live agent call"
	case s.opts.RunLive != nil && !s.opts.RunLive(sess.RunID()):
		return fmt.Sprintf("this MCP session's run %s is not a live run of this kitsoki process", sess.RunID())
	}
	return ""
}

func surfaceList(ss []toolserver.Surface) string {
	if len(ss) == 2 {
		return string(ss[0]) + " and " + string(ss[1])
	}
	return string(ss[0])
}

// arguments returns the call's arguments as an object (absent means {})
// and as JSON.
func arguments(req mcp.CallToolRequest) (map[string]any, []byte, error) {
	var args map[string]any
	switch a := req.Params.Arguments.(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = a
	default:
		return nil, nil, fmt.Errorf("arguments must be an object")
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, nil, fmt.Errorf("arguments: %v", err)
	}
	return args, raw, nil
}

// send makes the one RPC of the call under the 30 s deadline, registered
// so that disabling the plugin cancels it. Errors are worded for the
// agent and set c.outcome.
func (s *Service) send(ctx context.Context, c *call, proc Process, req *plugin.AgentToolRequest) (json.RawMessage, error) {
	ctx, cancelTimeout := clock.WithTimeoutCause(ctx, s.opts.Clock, s.opts.Timeout, errTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	key, ok := s.track(c.alias, cancel)
	if !ok {
		c.outcome = OutcomeRefused
		return nil, fmt.Errorf("plugin %s is disabled; its tool %s is not available", c.alias, c.name)
	}
	defer s.untrack(c.alias, key)
	out, err := proc.InvokeTool(ctx, req)
	if err == nil {
		return out, nil
	}
	var rpcErr *jsonrpc2.Error
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errDisabled):
		c.outcome = OutcomeCancelled
		return nil, fmt.Errorf("the call to %s was cancelled: plugin %s was disabled while it ran; it is not retried", c.name, c.alias)
	case errors.Is(cause, errTimeout):
		c.outcome = OutcomeTimeout
		return nil, fmt.Errorf("plugin %s did not answer %s within %s; the call was cancelled and is not retried", c.alias, c.name, s.opts.Timeout)
	case ctx.Err() != nil:
		c.outcome = OutcomeCancelled
		return nil, fmt.Errorf("the call to %s was cancelled (the agent call ended)", c.name)
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.CodeMethodNotFound:
		c.outcome = OutcomeUnimplemented
		return nil, fmt.Errorf("plugin %s does not implement %s (JSON-RPC method not found, %d): its declaration lists tool %s but the plugin serves no agent tools", c.alias, plugin.MethodAgentToolInvoke, rpcErr.Code, c.name)
	case errors.As(err, &rpcErr):
		c.outcome = OutcomeRPCError
		return nil, fmt.Errorf("plugin %s answered %s with an error: rpc error %d: %s", c.alias, c.name, rpcErr.Code, agent.Clip([]byte(rpcErr.Message)))
	}
	c.outcome = OutcomeCrashed
	var ae *agent.AskError
	detail := err.Error()
	if errors.As(err, &ae) {
		detail = ae.Detail
	}
	return nil, fmt.Errorf("plugin %s failed during %s and the call is not retried: %s", c.alias, c.name, detail)
}

var errTimeout = errors.New("tool call deadline")

// track registers a call in flight to alias; false if the plugin is no
// longer active.
func (s *Service) track(alias string, cancel context.CancelCauseFunc) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plugins[alias]
	if !ok || p.state() != StateActive {
		return 0, false
	}
	p.nextCall++
	p.calls[p.nextCall] = cancel
	return p.nextCall, true
}

func (s *Service) untrack(alias string, key uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.plugins[alias]; ok {
		delete(p.calls, key)
	}
}

// result checks the plugin's answer: an AgentToolResult object with text,
// structured content matching the output schema when one is declared, and
// at most 1 MiB of text and structured content together.
func (s *Service) result(c *call, t *tool, raw json.RawMessage) *mcp.CallToolResult {
	bad := func(format string, args ...any) *mcp.CallToolResult {
		c.outcome = OutcomeInvalidResult
		return mcp.NewToolResultError(fmt.Sprintf("plugin %s returned an invalid result for %s: ", c.alias, c.name) + fmt.Sprintf(format, args...))
	}
	var res plugin.AgentToolResult
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		return bad("not an AgentToolResult object: %v", err)
	}
	if res.Text == "" {
		return bad("text is missing (fallback text is required)")
	}
	size := len(res.Text)
	var structured []byte
	if res.StructuredContent != nil {
		var err error
		if structured, err = json.Marshal(res.StructuredContent); err != nil {
			return bad("structured_content: %v", err)
		}
		size += len(structured)
	}
	if size > agent.MaxToolResultBytes {
		return bad("text and structured content are %d bytes; the limit is %d (1 MiB)", size, agent.MaxToolResultBytes)
	}
	if res.StructuredContent != nil && t.output != nil {
		if err := t.output.Validate(map[string]any(res.StructuredContent)); err != nil {
			var ie *schema.InvalidError
			if !res.IsError || !errors.As(err, &ie) {
				return bad("structured_content does not match the output schema: %v", err)
			}
			res.StructuredContent, structured = nil, nil // an error answer's content is dropped, not its text
		}
	}
	if t.output != nil && res.StructuredContent == nil && !res.IsError {
		return bad("structured_content is missing; the tool declares an output schema")
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(res.Text)}, IsError: res.IsError}
	if res.StructuredContent != nil {
		out.StructuredContent = json.RawMessage(structured)
	}
	c.outcome = OutcomeOK
	if res.IsError {
		c.outcome = OutcomeToolError
	}
	return out
}

// newInvocationID returns 16 random hex digits.
func newInvocationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
