package toolserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// hangGuard bounds how long a test waits on the server; it asserts
// nothing about speed, it is only where a hung server fails the test.
const hangGuard = 20 * time.Second

// dripPost opens a connection, sends a POST's headers and one byte of a
// declared 1000-byte body, and returns the status line and whether the
// server then closed the connection.
func dripPost(t *testing.T, url, header string) (status string, closed bool) {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), EndpointPath)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n%s\r\n{", EndpointPath, addr, header)
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

// Many connections dripping a body without a token are each answered 401
// and closed at once: authentication comes before the body, and the
// unread body is not drained.
func TestHTTPDripWithoutTokenIsClosed(t *testing.T) {
	h := listen(t)
	open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	for i := range 20 {
		status, closed := dripPost(t, h.URL(), "")
		if !strings.Contains(status, "401") || !closed {
			t.Fatalf("drip %d without a token: status %q, closed %v; want 401 and the connection closed", i, status, closed)
		}
	}
	status, closed := dripPost(t, h.URL(), "Authorization: Bearer wrong\r\n")
	if !strings.Contains(status, "401") || !closed {
		t.Errorf("a wrong token: status %q, closed %v", status, closed)
	}
}

// A token holder dripping a body is answered 408 once the body timeout
// passes, and the connection closed.
func TestHTTPDripWithTokenTimesOut(t *testing.T) {
	h, err := ListenHTTP("", nil, WithBodyTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	status, closed := dripPost(t, h.URL(), "Authorization: Bearer "+s.Token()+"\r\n")
	if !strings.Contains(status, "408") || !closed {
		t.Errorf("status %q, closed %v; want 408 and the connection closed", status, closed)
	}
}

// DNS rebinding is refused before the token is even looked at.
func TestHTTPRefusesDNSRebindingBeforeAuth(t *testing.T) {
	h := listen(t)
	req, _ := http.NewRequest(http.MethodPost, h.URL(), strings.NewReader(initializeBody))
	req.Host = "rebound.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `Host "rebound.example" is not a loopback name`) {
		t.Errorf("status %d %q; want 403 naming the Host", resp.StatusCode, body)
	}
}

// A token holder cannot create sessions without limit: past the cap
// (default 100) an initialize is refused 503 with the reason; sessions
// idle past the timeout on the server's clock make room again.
func TestHTTPSessionFloodIsCapped(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h, err := ListenHTTP("", nil, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	initialize := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.URL(), strings.NewReader(initializeBody))
		req.Header = mcpRequest(http.MethodPost, h.URL(), s.Token(), "").Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for i := range 100 {
		if code, body := initialize(); code != http.StatusOK {
			t.Fatalf("initialize %d: %d %s", i, code, body)
		}
	}
	code, body := initialize()
	if want := "too many live MCP sessions: the limit is 100; end one with DELETE, or wait for one to go 30m0s without a request\n"; code != http.StatusServiceUnavailable || body != want {
		t.Fatalf("initialize 101: %d %q; want 503 %q", code, body, want)
	}
	clk.Advance(30 * time.Minute)
	if code, body := initialize(); code != http.StatusOK {
		t.Errorf("initialize after the others idled out: %d %s", code, body)
	}
}
