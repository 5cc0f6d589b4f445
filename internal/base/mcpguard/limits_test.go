package mcpguard

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// hangGuard bounds how long a test waits for the server: it is not an
// assertion about speed, only the point where a hung server fails the test.
const hangGuard = 20 * time.Second

// A client that sends its headers and then drips (here: stops sending)
// its body is answered 408 and its connection closed once the body
// timeout passes, instead of being held open.
func TestGuardBoundsBodyReadTime(t *testing.T) {
	reached := atomic.Bool{}
	srv := httptest.NewServer(Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
	}), 0, nil, WithBodyTimeout(50*time.Millisecond)))
	defer srv.Close()
	status, closed := drip(t, srv.Listener.Addr().String(), "")
	if !strings.Contains(status, "408") || !closed {
		t.Errorf("status %q, closed %v; want 408 Request Timeout and the connection closed", status, closed)
	}
	if reached.Load() {
		t.Error("the handler saw a request whose body never arrived")
	}
}

// drip opens a connection, sends a POST's headers and the first byte of
// its declared 1000-byte body, and returns the response's status line
// and whether the server then closed the connection.
func drip(t *testing.T, addr, header string) (status string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"+header+"\r\n{")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.Status, err == io.EOF
}

// mcpClient speaks just enough of the session-based protocol revision to
// initialize sessions, use them and delete them.
type mcpClient struct {
	t   *testing.T
	url string
}

func (c mcpClient) post(id, body string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set(SessionHeader, id)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

func (c mcpClient) initialize() (id string, status int, body string) {
	resp, body := c.post("", initialize)
	return resp.Header.Get(SessionHeader), resp.StatusCode, body
}

func (c mcpClient) ping(id string) int {
	resp, _ := c.post(id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	return resp.StatusCode
}

// A token holder flooding initialize requests gets at most the cap of
// live sessions, then a 503 that says why; sessions idle past the timeout
// (on the injected clock) expire, their state in mcp-go is dropped, and
// room is made for new ones; a session with a request in flight (an open
// GET stream) does not expire.
func TestSessionFloodIsBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var registered atomic.Int64
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { registered.Add(1) })
	hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { registered.Add(-1) })
	ids := NewSessions(WithClock(clk), WithMaxSessions(3), WithIdleTimeout(time.Minute))
	mcp := server.NewStreamableHTTPServer(server.NewMCPServer("t", "1", server.WithHooks(hooks)), server.WithSessionIdManager(ids))
	srv := httptest.NewServer(Guard(mcp, 0, ids))
	defer srv.Close()
	c := mcpClient{t: t, url: srv.URL + "/mcp"}

	var live []string
	for i := range 10 {
		id, status, body := c.initialize()
		if i < 3 {
			if status != http.StatusOK || id == "" {
				t.Fatalf("initialize %d: %d %s", i, status, body)
			}
			live = append(live, id)
			continue
		}
		if status != http.StatusServiceUnavailable || !strings.Contains(body, "too many live MCP sessions: the limit is 3") {
			t.Fatalf("initialize %d past the cap: %d %q", i, status, body)
		}
	}
	if ids.Len() != 3 || registered.Load() != 3 {
		t.Fatalf("%d sessions known, %d registered with mcp-go; want 3", ids.Len(), registered.Load())
	}

	// Session 0 holds a GET stream open; session 1 is used at 30s;
	// session 2 idles.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, c.url, live[0])
	clk.Advance(30 * time.Second)
	if st := c.ping(live[1]); st != http.StatusOK {
		t.Fatalf("ping of a live session: %d", st)
	}
	clk.Advance(40 * time.Second) // session 2 is 70s idle, session 1 40s
	id, status, body := c.initialize()
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize after one session idled out: %d %s", status, body)
	}
	if st := c.ping(live[2]); st != http.StatusNotFound {
		t.Errorf("a request of the expired session: %d, want 404", st)
	}
	if st := c.ping(live[0]); st != http.StatusOK {
		t.Errorf("the session with an open stream expired: ping %d", st)
	}
	if st := c.ping(live[1]); st != http.StatusOK {
		t.Errorf("a session 40s idle expired: ping %d", st)
	}
	if n := registered.Load(); n != 3 {
		t.Errorf("%d sessions registered with mcp-go; want 3 (the expired one dropped)", n)
	}
	cancel()
	stream.Wait()
}

// openStream opens session id's GET stream and returns once the server
// has answered its headers; Wait returns after ctx ends it.
func openStream(t *testing.T, ctx context.Context, url, id string) interface{ Wait() } {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set(SessionHeader, id)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	return waiter(done)
}

type waiter chan struct{}

func (w waiter) Wait() { <-w }
