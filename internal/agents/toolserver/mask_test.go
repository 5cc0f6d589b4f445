package toolserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

const leaked = "sk-live-0123456789abcdef"

// TestToolResultsAreMasked: a session serving a story with secrets masks
// them in every tool result, text and structured content alike, by the
// one rule: the long secret wherever it occurs, the short value "crash"
// only where a whole string equals it, keys never.
func TestToolResultsAreMasked(t *testing.T) {
	h := listen(t)
	world := map[string]any{"leak": "the key is " + leaked, "mode": "crash", "crash": "kept key", "note": "crashed"}
	s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, nil), Live: Detached(world),
		Secrets: []string{leaked, "crash"}})
	for _, gen := range generations {
		c := connect(t, s.URL(), s.Token(), gen)
		text, sc, isErr := c.mustCall(t, ToolGetWorld, nil)
		if isErr || strings.Contains(text, leaked) {
			t.Fatalf("%s: get_world: %q", gen, text)
		}
		want := map[string]any{"leak": "the key is REDACTED", "mode": "REDACTED", "crash": "kept key", "note": "crashed"}
		if d := cmp.Diff(want, sc["vars"]); d != "" {
			t.Errorf("%s: structured vars (-want +got):\n%s", gen, d)
		}
		if !strings.Contains(text, `"leak":"the key is REDACTED"`) {
			t.Errorf("%s: text content not masked as JSON: %s", gen, text)
		}
	}
}

func TestMaskResult(t *testing.T) {
	m := secret.New([]string{leaked, "crash"})
	for _, tc := range []struct {
		name string
		in   *mcp.CallToolResult
		want []string // text of each content
	}{
		{"plain text", mcp.NewToolResultError("token " + leaked + " refused\ncrash\n"), []string{"token REDACTED refused\nREDACTED\n"}},
		{"json text", mcp.NewToolResultText(`{"mode":"crash","k":"agent: plugin_crash: x"}`), []string{`{"k":"agent: plugin_crash: x","mode":"REDACTED"}`}},
		{"nothing to mask", mcp.NewToolResultText(`{"b":1, "a":2}`), []string{`{"b":1, "a":2}`}},
	} {
		got := MaskResult(m, tc.in)
		var texts []string
		for _, c := range got.Content {
			texts = append(texts, c.(mcp.TextContent).Text)
		}
		if d := cmp.Diff(tc.want, texts); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
		if got.IsError != tc.in.IsError {
			t.Errorf("%s: IsError changed", tc.name)
		}
	}
	if MaskResult(nil, nil) != nil {
		t.Error("nil result")
	}
}
