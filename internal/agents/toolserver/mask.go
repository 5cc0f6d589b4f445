package toolserver

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// MaskResult masks secrets in a tool result by the rule of
// internal/base/secret: text that is JSON (what JSONResult writes) as JSON
// values, other text as text, and the structured content as JSON values.
// A result with nothing to mask is returned as it is.
func MaskResult(m *secret.Masker, res *mcp.CallToolResult) *mcp.CallToolResult {
	if m.Empty() || res == nil {
		return res
	}
	out := *res
	out.Content = make([]mcp.Content, len(res.Content))
	for i, c := range res.Content {
		out.Content[i] = c
		tc, ok := c.(mcp.TextContent)
		if !ok {
			if p, isPtr := c.(*mcp.TextContent); isPtr && p != nil {
				tc, ok = *p, true
			}
		}
		if !ok || !m.MayOccur([]byte(tc.Text)) {
			continue
		}
		if json.Valid([]byte(tc.Text)) {
			if b, err := m.JSON([]byte(tc.Text)); err == nil {
				tc.Text = string(b)
				out.Content[i] = tc
				continue
			}
		}
		tc.Text = m.Text(tc.Text)
		out.Content[i] = tc
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		switch {
		case err != nil:
			out.StructuredContent = nil // cannot be checked: not sent
		case m.MayOccur(b):
			masked, merr := m.JSON(b)
			var v any
			if merr != nil || json.Unmarshal(masked, &v) != nil {
				out.StructuredContent = nil
			} else {
				out.StructuredContent = v
			}
		}
	}
	return &out
}
