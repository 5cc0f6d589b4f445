package plugin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPHandlerServesBothGenerations calls the ask tool with mcp-go's
// client at its default (stateless 2026-07-28) and pinned to the
// session-based 2025-06-18 revision.
func TestMCPHandlerServesBothGenerations(t *testing.T) {
	srv := httptest.NewServer(MCPHandler(testAgent, WithServerInfo("test", "1")))
	defer srv.Close()
	for _, version := range []string{"", mcp.ProtocolVersion20250618} {
		t.Run("version="+version, func(t *testing.T) {
			var opts []client.ClientOption
			if version != "" {
				opts = append(opts, client.WithProtocolVersion(version))
			}
			tr, err := transport.NewStreamableHTTP(srv.URL + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(tr, opts...)
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			if version != "" && c.ProtocolVersion() != version {
				t.Errorf("negotiated %q, want %q", c.ProtocolVersion(), version)
			}
			var call mcp.CallToolRequest
			call.Params.Name = DefaultTool
			call.Params.Arguments = map[string]any{"prompt": "hello", "turn": 1}
			res, err := c.CallTool(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			var resp AskResponse
			if err := json.Unmarshal(res.RawStructuredContent, &resp); err != nil || string(resp.Submission) != `"hello"` {
				t.Errorf("structuredContent %s (%v)", res.RawStructuredContent, err)
			}
			text, _ := mcp.AsTextContent(res.Content[0])
			if text == nil || text.Text != string(res.RawStructuredContent) {
				t.Errorf("text fallback %v, want the same AskResponse JSON", res.Content)
			}
			call.Params.Arguments = map[string]any{"prompt": "fail"}
			res, err = c.CallTool(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			if text, _ := mcp.AsTextContent(res.Content[0]); !res.IsError || text.Text != "model unavailable" {
				t.Errorf("agent error gave %+v, want isError with the message", res)
			}
		})
	}
}
