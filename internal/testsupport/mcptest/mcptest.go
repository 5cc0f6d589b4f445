// Package mcptest holds helpers for tests that drive kitsoki's MCP server
// with an mcp-go client: connecting one, reading tool results and counting
// tools/list_changed notifications.
package mcptest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Text returns the first text content of a tool result ("" when none).
func Text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			return tc.Text
		}
	}
	return ""
}

// Structured decodes a tool result's structured content (nil when none).
func Structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.RawStructuredContent == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(res.RawStructuredContent, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ExpectChanged waits for exactly n tools/list_changed notifications on
// changed: each within 5 s, then none more within a settling period.
func ExpectChanged(t testing.TB, changed <-chan struct{}, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d tools/list_changed, want %d", i, n)
		}
	}
	select {
	case <-changed:
		t.Fatalf("got more than %d tools/list_changed", n)
	case <-time.After(200 * time.Millisecond):
	}
}

// Lister is an MCP client that lists tools: mcp-go's client, or a Client.
type Lister interface {
	ListTools(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error)
}

// Tools lists the tools c is offered, by name.
func Tools(t testing.TB, c Lister) map[string]mcp.Tool {
	t.Helper()
	out := map[string]mcp.Tool{}
	for _, tool := range list(t, c) {
		out[tool.Name] = tool
	}
	return out
}

// ToolNames lists the names of the tools c is offered, sorted (a name
// offered twice stands twice).
func ToolNames(t testing.TB, c Lister) []string {
	t.Helper()
	var names []string
	for _, tool := range list(t, c) {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func list(t testing.TB, c Lister) []mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}
