package mcp

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/mcptest"
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
type generation string

const (
	modern generation = "2026-07-28"
	legacy generation = "2025-11-25"
)

var generations = []generation{modern, legacy}

// testClient is an mcp-go client that counts tools/list_changed.
type testClient struct {
	*client.Client
	changed chan struct{}
}

// getSignal is a RoundTripper that reports when a GET stream's response
// headers arrived: by then the server has registered the stream.
type getSignal struct {
	next http.RoundTripper
	once sync.Once
	up   chan struct{}
}

func (g *getSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := g.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && res.StatusCode == http.StatusOK {
		g.once.Do(func() { close(g.up) })
	}
	return res, err
}

// connect opens a client of generation gen on a session and waits until it
// can receive notifications.
func connect(t testing.TB, url, token string, gen generation) *testClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sig := &getSignal{next: http.DefaultTransport, up: make(chan struct{})}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPBasicClient(&http.Client{Transport: sig}),
	}
	var copts []client.ClientOption
	if gen == legacy {
		opts = append(opts, transport.WithContinuousListening())
		copts = append(copts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testClient{Client: client.NewClient(tr, copts...), changed: make(chan struct{}, 16)}
	acked := make(chan struct{}, 1)
	tc.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			tc.changed <- struct{}{}
		case "notifications/subscriptions/acknowledged":
			select {
			case acked <- struct{}{}:
			default:
			}
		}
	})
	if err := tc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tc.Close() })
	if _, err := tc.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize (%s): %v", gen, err)
	}
	if got := tc.ProtocolVersion(); got != string(gen) {
		t.Fatalf("negotiated protocol %s, want %s", got, gen)
	}
	if gen == modern {
		stop, err := tc.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("subscription was not acknowledged")
		}
	} else {
		select {
		case <-sig.up:
		case <-ctx.Done():
			t.Fatal("GET stream did not open")
		}
	}
	return tc
}

func (tc *testClient) toolNames(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := tc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
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
	annotate(&t, false, false, true, false)
	return t
}
