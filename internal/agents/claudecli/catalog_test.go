package claudecli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// TestRunCatalogReachesTheSession: the plugin-tool catalog of the call's
// run is the one the call's MCP session offers and calls.
func TestRunCatalogReachesTheSession(t *testing.T) {
	cat := toolserver.NewCatalog(nil)
	def := mcp.NewTool("kitsoki_agent_tagger_add_tag", mcp.WithDescription("Add a tag."))
	called := make(chan string, 1)
	_, err := cat.Publish([]toolserver.CatalogTool{{
		Tool: toolserver.Tool{Def: def, Version: "1", Handler: func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			called <- toolserver.SessionFrom(ctx).RunID()
			return mcp.NewToolResultText("tagged"), nil
		}},
		Plugin: "agent.tagger", Surfaces: []toolserver.Surface{toolserver.KanbanTask},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := &agent.Run{ID: "run-9", Live: &liveRun{}, Catalog: cat}
	h := newHarness(t, fakeRun{Calls: []fakeCall{{Tool: "kitsoki_agent_tagger_add_tag"}}, Result: "done"})
	if _, err := h.builtin().Ask(ctx, &agent.Call{Request: request("task", ""), Run: run}); err != nil {
		t.Fatal(err)
	}
	l := h.logs()[0]
	if !slices.Contains(l.Listed, "kitsoki_agent_tagger_add_tag") || len(l.Results) != 1 || l.Results[0].IsError {
		t.Errorf("listed %v, results %+v, denied %v", l.Listed, l.Results, l.Denied)
	}
	// A plugin tool enabled after launch must not be denied in print mode:
	// with a catalog, kitsoki's whole server is approved.
	if !slices.Contains(strings.Split(l.Flags["--allowedTools"], ","), "mcp__kitsoki") {
		t.Errorf("--allowedTools = %q, want the server-wide mcp__kitsoki rule", l.Flags["--allowedTools"])
	}
	select {
	case run := <-called:
		if run != "run-9" {
			t.Errorf("the tool ran for run %q, want run-9", run)
		}
	default:
		t.Error("the plugin tool's handler never ran")
	}
	if cat.Sessions() != 0 {
		t.Errorf("%d sessions still attached after the call", cat.Sessions())
	}
}
