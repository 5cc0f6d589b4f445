package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
)

// DefaultTool is the tool name kitsoki calls when a declaration sets none.
const DefaultTool = "ask"

// askInputSchema describes the tool's arguments for generic MCP clients.
// It is deliberately small: mcp-go's server re-reads the input schema on
// every call (to look for header-mapped parameters), and kitsoki is the
// validator anyway. docs/plugins.md lists the fields.
const askInputSchema = `{"type":"object","description":"A kitsoki AskRequest (session_id, turn, state_path, verb, prompt, schema, with, world, deadline, call_id)."}`

type mcpConfig struct {
	tool, name, version string
	path                string
	logger              *slog.Logger
	serverOpts          []server.StreamableHTTPOption
	maxBody             int64
}

// MCPOption configures MCPHandler.
type MCPOption func(*mcpConfig)

// WithToolName serves the agent under another tool name than "ask" (the
// declaration's tool: must then name it).
func WithToolName(name string) MCPOption { return func(c *mcpConfig) { c.tool = name } }

// WithServerInfo sets the server name and version reported to clients.
func WithServerInfo(name, version string) MCPOption {
	return func(c *mcpConfig) { c.name, c.version = name, version }
}

// WithEndpointPath sets the URL path the handler answers on (default
// "/mcp"); requests for other paths get 404.
func WithEndpointPath(path string) MCPOption { return func(c *mcpConfig) { c.path = path } }

// WithLogger sets the logger of the underlying MCP server.
func WithLogger(l *slog.Logger) MCPOption { return func(c *mcpConfig) { c.logger = l } }

// WithMaxBodyBytes sets the request-body limit (default 4 MiB): a larger
// request is answered 413 without being read past the limit.
func WithMaxBodyBytes(n int64) MCPOption { return func(c *mcpConfig) { c.maxBody = n } }

// WithStreamableHTTPOptions passes options through to mcp-go's Streamable
// HTTP server (for example server.WithHTTPContextFunc to read headers).
// Options choosing the session id manager (WithStateLess, WithStateful,
// WithSessionIdManager, WithSessionIdManagerResolver) are overridden: the
// handler keeps its own session ids, so that a made-up or deleted
// Mcp-Session-Id is answered 404.
func WithStreamableHTTPOptions(opts ...server.StreamableHTTPOption) MCPOption {
	return func(c *mcpConfig) { c.serverOpts = append(c.serverOpts, opts...) }
}

// MCPHandler returns an http.Handler serving a as an MCP server over
// Streamable HTTP, with one tool (default "ask") whose arguments are an
// AskRequest. The result carries the AskResponse twice, as the MCP spec
// recommends: as structuredContent and as JSON text. An error from Ask
// becomes a tool result with isError: true and the error text, which
// kitsoki reports as a transport_error.
//
// The handler speaks every protocol revision mcp-go does: the stateless
// 2026-07-28 core and the session-based revisions before it. A request
// body over the limit (WithMaxBodyBytes, default 4 MiB) is answered 413,
// and an Mcp-Session-Id the handler did not mint, or whose client deleted
// it, 404 (kitsoki then initializes a new session).
//
// Every request is answered by mcp-go's StreamableHTTPServer, behind the
// body limit and session check of internal/base/mcpguard.
func MCPHandler(a Agent, opts ...MCPOption) http.Handler {
	cfg := mcpConfig{tool: DefaultTool, name: "kitsoki-plugin", version: "1", path: "/mcp", maxBody: mcpguard.DefaultMaxBody}
	for _, o := range opts {
		o(&cfg)
	}
	srv := server.NewMCPServer(cfg.name, cfg.version, server.WithToolCapabilities(false))
	tool := mcp.NewToolWithRawSchema(cfg.tool, "Answer one kitsoki agent call. Arguments: an AskRequest. Result: an AskResponse.", json.RawMessage(askInputSchema))
	srv.AddTool(tool, askTool(a))
	hopts := []server.StreamableHTTPOption{server.WithEndpointPath(cfg.path)}
	if cfg.logger != nil {
		hopts = append(hopts, server.WithStreamableHTTPLogger(cfg.logger))
	}
	ids := mcpguard.NewSessions()
	hopts = append(hopts, cfg.serverOpts...)
	hopts = append(hopts, server.WithSessionIdManager(ids))
	return mcpguard.Guard(server.NewStreamableHTTPServer(srv, hopts...), cfg.maxBody, ids)
}

// askTool adapts an Agent to an MCP tool handler.
func askTool(a Agent) server.ToolHandlerFunc {
	return func(ctx context.Context, call mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var req AskRequest
		if err := call.BindArguments(&req); err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("arguments are not an AskRequest: %v", err)), nil
		}
		text, structured, isError := toolResult(ctx, a, &req)
		if isError {
			return mcp.NewToolResultError(text), nil
		}
		return &mcp.CallToolResult{
			Content:              []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: text}},
			StructuredContent:    json.RawMessage(structured),
			RawStructuredContent: structured,
		}, nil
	}
}

// toolResult asks a and returns the tool result's parts: the AskResponse
// as JSON text and as structured content, or an error text (isError).
func toolResult(ctx context.Context, a Agent, req *AskRequest) (text string, structured []byte, isError bool) {
	resp, err := a.Ask(ctx, req)
	if err != nil {
		return err.Error(), nil, true
	}
	if resp == nil {
		resp = &AskResponse{}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return fmt.Sprintf("encode AskResponse: %v", err), nil, true
	}
	return string(b), b, false
}
