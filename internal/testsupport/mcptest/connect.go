package mcptest

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Generation is an MCP protocol generation a test client speaks.
type Generation string

const (
	// Modern is the stateless revision mcp-go negotiates by default.
	Modern Generation = "2026-07-28"
	// Legacy is the session-based revision, notified over a GET stream.
	Legacy Generation = "2025-11-25"
)

// Client is a real mcp-go client of a kitsoki MCP session; Changed gets a
// value for every tools/list_changed notification.
type Client struct {
	*client.Client
	Changed chan struct{}
}

// Connect opens a client of generation gen on the session at url, sending
// token as its bearer. A Modern client with listen subscribes to
// tools/list_changed and waits for the acknowledgement (without listen it
// ignores the notification); a Legacy client always opens its GET stream
// and waits until the server has it. The client is closed when the test
// ends.
func Connect(t testing.TB, url, token string, gen Generation, listen bool) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sig := &getSignal{next: http.DefaultTransport, up: make(chan struct{})}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPBasicClient(&http.Client{Transport: sig}),
	}
	var copts []client.ClientOption
	if gen == Legacy {
		//lint:ignore SA1019 a Legacy client stands for one on the 2025-11-25 protocol, whose standalone GET stream is what this option opens.
		opts = append(opts, transport.WithContinuousListening())
		copts = append(copts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Client: client.NewClient(tr, copts...), Changed: make(chan struct{}, 16)}
	acked := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			c.Changed <- struct{}{}
		case "notifications/subscriptions/acknowledged":
			select {
			case acked <- struct{}{}:
			default:
			}
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize (%s): %v", gen, err)
	}
	if got := c.ProtocolVersion(); got != string(gen) {
		t.Fatalf("negotiated protocol %s, want %s", got, gen)
	}
	switch {
	case gen == Legacy:
		select {
		case <-sig.up:
		case <-ctx.Done():
			t.Fatal("GET stream did not open")
		}
	case listen:
		stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("subscription was not acknowledged")
		}
	}
	return c
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
