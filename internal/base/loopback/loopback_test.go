package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIsHost(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST:80", true}, {"127.0.0.1", true}, {"127.0.0.1:8080", true},
		{"127.9.9.9:1", true}, {"[::1]:9", true}, {"::1", true}, {"[::1]", true},
		{"evil.example", false}, {"evil.example:8080", false}, {"localhost.evil.example", false},
		{"10.0.0.1:80", false}, {"", false}, {"0.0.0.0:80", false},
	} {
		if got := IsHost(c.in); got != c.want {
			t.Errorf("IsHost(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 2), Port: 4000}
	for _, c := range []struct {
		name         string
		local        net.Addr
		host, origin string
		refused      string // a substring of the error; "" means allowed
	}{
		{"loopback host", loop, "127.0.0.1:4000", "", ""},
		{"localhost", loop, "localhost:4000", "", ""},
		{"rebound name", loop, "attacker.example:4000", "", `Host "attacker.example:4000" is not a loopback name`},
		{"loopback origin", loop, "127.0.0.1:4000", "http://localhost:4000", ""},
		{"foreign origin", loop, "127.0.0.1:4000", "https://attacker.example", `Origin "https://attacker.example" is not a loopback origin`},
		{"null origin", loop, "127.0.0.1:4000", "null", `Origin "null"`},
		{"not over loopback", lan, "anything.example", "https://attacker.example", ""},
		{"local address unknown", nil, "anything.example", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if c.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, c.local))
			}
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			err := Check(r)
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("error %v, want one containing %q", err, c.refused)
			}
		})
	}
}

// Guard answers a refused request 403 and closes the connection, over a
// real loopback server.
func TestGuard(t *testing.T) {
	srv := httptest.NewServer(Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Host = "rebound.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Errorf("status %d, close %v; want 403 and the connection closed", resp.StatusCode, resp.Close)
	}
	resp, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a loopback Host: status %d", resp.StatusCode)
	}
}
