package toolserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// fakeLive records what the tools asked of the run.
type fakeLive struct {
	mu      sync.Mutex
	world   map[string]any
	asked   []string
	parent  []string
	titles  []string
	steps   []string
	intents []string
	slots   []map[string]any
}

func newFakeLive() *fakeLive {
	return &fakeLive{world: map[string]any{"claim": "taxi", "amount": 40}}
}

func (f *fakeLive) World() map[string]any { return f.world }
func (f *fakeLive) AskOperator(_ context.Context, q string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	return "operator says yes", nil
}
func (f *fakeLive) AskParent(_ context.Context, q string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parent = append(f.parent, q)
	return "parent says no", nil
}
func (f *fakeLive) SetTitle(_ context.Context, title string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.titles = append(f.titles, title)
	return nil
}
func (f *fakeLive) CompleteStep(_ context.Context, s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, s)
	return nil
}
func (f *fakeLive) EmitIntent(_ context.Context, name string, slots map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intents = append(f.intents, name)
	f.slots = append(f.slots, slots)
	return nil
}

func mustProfile(t testing.TB, s Surface, caps []Capability, providers ...string) Profile {
	t.Helper()
	p, err := NewProfile(s, caps, providers)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func listen(t testing.TB) *HTTPServer {
	t.Helper()
	h, err := ListenHTTP("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func open(t testing.TB, h *HTTPServer, cfg SessionConfig) *Session {
	t.Helper()
	s, err := h.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// generation is an MCP protocol generation a test client speaks.
type generation = mcptest.Generation

const (
	modern = mcptest.Modern
	legacy = mcptest.Legacy
)

var generations = []generation{modern, legacy}

// testClient is an mcp-go client that counts tools/list_changed.
type testClient struct{ *mcptest.Client }

// connect opens a client of generation gen on a session and waits until it
// can receive notifications.
func connect(t testing.TB, url, token string, gen generation) *testClient {
	t.Helper()
	return &testClient{mcptest.Connect(t, url, token, gen, true)}
}

func (tc *testClient) call(t testing.TB, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return tc.CallTool(ctx, req)
}

// mustCall calls a tool that must answer without a protocol error and
// returns its text and structured content.
func (tc *testClient) mustCall(t testing.TB, name string, args map[string]any) (string, map[string]any, bool) {
	t.Helper()
	res, err := tc.call(t, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return mcptest.Text(res), mcptest.Structured(t, res), res.IsError
}

func callReq(name string, args map[string]any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

func okHandler(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}

// pluginTool is a plugin-contributed tool definition as issue 6's catalog
// will produce it.
func pluginTool(name string) mcp.Tool {
	t := mcp.NewTool(name, mcp.WithDescription("A plugin tool."), mcp.WithString("tag", mcp.Required()))
	Annotate(&t, false, false, true, false)
	return t
}
