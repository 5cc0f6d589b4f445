// Package toolloop gives an API backend (builtin.anthropic,
// builtin.openai) kitsoki's tools for one agent call, in process: the
// same per-call MCP session the claude CLI is handed over HTTP
// (internal/agents/toolserver), bound to the call's run and offering what
// the call's tool profile allows, but reached through mcp-go's in-process
// client. The backend lists the tools for the model, calls the ones the
// model asks for and sends their results back; the session's submit tool
// validates a structured answer against the call's schema and keeps the
// first valid one.
package toolloop

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/version"
)

// Submit is the name of the tool that delivers a structured answer.
const Submit = toolserver.ToolSubmit

// Options configure Open.
type Options struct {
	// Namespace starts the kinds of the sub-events the tool calls are
	// recorded as ("<namespace>.mcp.<tool>"): the call's alias, or
	// agent.claude on the built-in path.
	Namespace string
	// Secrets are masked in every tool result.
	Secrets []string
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Def is one tool as a model is offered it.
type Def struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the tool's arguments (an object
	// schema).
	InputSchema json.RawMessage
}

// Result is what a tool answered: its text (every text block, joined),
// and whether it is an error the model should read and act on.
type Result struct {
	Text    string
	IsError bool
}

// Tools are one call's tools. Close them when the call ends.
type Tools struct {
	call      *agent.Call
	sess      *toolserver.Session
	client    *client.Client
	namespace string
}

// Open opens the call's tool session in process: SessionConfig's session,
// reached through mcp-go's in-process client.
func Open(ctx context.Context, call *agent.Call, o Options) (*Tools, error) {
	cfg, err := SessionConfig(call, o)
	if err != nil {
		return nil, err
	}
	sess, err := toolserver.NewSession(cfg)
	if err != nil {
		return nil, fmt.Errorf("open the call's tools: %w", err)
	}
	c, err := client.NewInProcessClient(sess.MCPServer())
	if err == nil {
		err = c.Start(ctx)
	}
	if err == nil {
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "kitsoki", Version: version.String()}
		_, err = c.Initialize(ctx, init)
	}
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("connect to the call's tools: %w", err)
	}
	return &Tools{call: call, sess: sess, client: c, namespace: Namespace(call, o.Namespace)}, nil
}

// Namespace is the sub-event namespace of a call's tool calls: ns when
// given, else the call's alias, else agent.claude (the built-in path).
func Namespace(call *agent.Call, ns string) string {
	switch {
	case ns != "":
		return ns
	case call.Alias != "":
		return call.Alias
	}
	return agent.DefaultAlias
}

// SessionConfig is the configuration of a call's tool session: the
// profile its verb and run give (toolserver.ResolveProfile), bound to its
// run (or detached, reading the request's world), with the run's plugin
// tools and the call's schema behind the submit tool. The agent CLI
// transports open it on kitsoki's loopback MCP server instead.
func SessionConfig(call *agent.Call, o Options) (toolserver.SessionConfig, error) {
	req := call.Request
	cc := callContext(call.Run)
	profile, err := toolserver.ResolveProfile(req.Verb, cc)
	if err != nil {
		return toolserver.SessionConfig{}, err
	}
	cfg := toolserver.SessionConfig{
		Profile: profile, RunID: req.SessionID, SessionID: req.CallID, Schema: req.Schema, Validate: call.Validate,
		Live: toolserver.Detached(req.World.Vars), Secrets: o.Secrets, Clock: o.Clock, Logger: o.Logger,
	}
	if cc != nil {
		if cc.RunID != "" {
			cfg.RunID = cc.RunID
		}
		cfg.WorkspaceID, cfg.StoryDir = cc.WorkspaceID, cc.StoryDir
		if cc.Live != nil {
			cfg.Live = cc.Live
		}
		if call.Run.Catalog != nil {
			cat, ok := call.Run.Catalog.(*toolserver.Catalog)
			if !ok {
				return toolserver.SessionConfig{}, fmt.Errorf("the run's tool catalog is a %T, not kitsoki's MCP catalog (*toolserver.Catalog)", call.Run.Catalog)
			}
			cfg.Catalog = cat
		}
	}
	return cfg, nil
}

// SubEvents records a session's tool calls as sub-events of the call
// ("<namespace>.mcp.<tool>", with its outcome and duration, never its
// arguments or result), as the claude CLI's tool calls are.
func SubEvents(call *agent.Call, namespace string, evs []toolserver.ToolEvent) []agent.Event {
	if len(evs) == 0 {
		return nil
	}
	req := call.Request
	out := make([]agent.Event, len(evs))
	for i, ev := range evs {
		out[i] = agent.Event{
			Turn: int64(req.Turn), TS: ev.At.UTC().Format(time.RFC3339Nano), Kind: namespace + ".mcp." + ev.Tool,
			StatePath: req.StatePath, CallID: req.CallID,
			Payload: map[string]any{"tool": ev.Tool, "outcome": ev.Outcome, "duration_ms": ev.Duration.Milliseconds()},
		}
	}
	return out
}

// callContext is what the call's profile and ids are resolved from.
func callContext(r *agent.Run) *toolserver.CallContext {
	if r == nil {
		return nil
	}
	return &toolserver.CallContext{RunID: r.ID, WorkspaceID: r.WorkspaceID, StoryDir: r.StoryDir,
		Autopilot: r.Autopilot, HasParent: r.HasParent, TitleOwned: r.TitleOwned, ToolProviders: r.ToolProviders, Live: r.Live}
}

// Defs lists the tools offered now (plugin tools can come and go while a
// call runs), sorted by name, without the ones named in except. A
// read-only call is offered no tool that is not marked read-only, except
// submit.
func (t *Tools) Defs(ctx context.Context, except ...string) ([]Def, error) {
	res, err := t.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("list the call's tools: %w", err)
	}
	out := make([]Def, 0, len(res.Tools))
	for _, tool := range res.Tools {
		if slices.Contains(except, tool.Name) {
			continue
		}
		if t.call.ReadOnly && tool.Name != Submit && (tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint) {
			continue
		}
		schema := tool.RawInputSchema
		if len(schema) == 0 {
			b, err := json.Marshal(tool.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: encode its input schema: %w", tool.Name, err)
			}
			schema = b
		}
		out = append(out, Def{Name: tool.Name, Description: tool.Description, InputSchema: schema})
	}
	slices.SortFunc(out, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Call runs one tool with the arguments the model gave (a JSON object;
// empty is {}). A tool the model may not use, arguments that are not an
// object, and a failing tool all come back as an error Result for the
// model to read; only a call that could not be made at all is an error.
func (t *Tools) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return Result{Text: fmt.Sprintf("the arguments of %s are not a JSON object: %v", name, err), IsError: true}, nil
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = m
	res, err := t.client.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{Text: fmt.Sprintf("tool %s failed: %v", name, err), IsError: true}, nil
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return Result{Text: strings.Join(parts, "\n"), IsError: res.IsError}, nil
}

// Submission is the first valid submission made through the submit tool.
func (t *Tools) Submission() (json.RawMessage, bool) { return t.sess.Submission() }

// SubEvents records each tool call as a sub-event of the agent call.
func (t *Tools) SubEvents() []agent.Event { return SubEvents(t.call, t.namespace, t.sess.ToolEvents()) }

// Close ends the session: its tools stop working.
func (t *Tools) Close() {
	_ = t.client.Close()
	t.sess.Close()
}
