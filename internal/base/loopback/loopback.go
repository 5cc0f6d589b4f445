// Package loopback keeps a server that listens on a loopback address for
// the machine it runs on, against DNS rebinding: a web page whose domain
// its owner re-points at 127.0.0.1 reaches the server through the
// victim's browser, with its own name in the Host header (and its own
// site in the Origin header). A request that arrives over a loopback
// connection must name a loopback host, and if it carries an Origin, a
// loopback origin. This is the check mcp-go applies to its Streamable
// HTTP servers, plus the Origin the MCP transport spec asks servers to
// validate; every kitsoki HTTP server (the MCP endpoint, the plugin SDK's
// fast path, `trace view --serve`) uses this one implementation.
package loopback

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// IsHost reports whether hostport names a loopback interface: "localhost"
// (any case), a loopback IP such as 127.0.0.1 or ::1, bare, bracketed or
// with a port.
func IsHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]") // a bare host, without a port
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Check returns an error when r came over a loopback connection
// (http.LocalAddrContextKey is a loopback address) but its Host header
// is not a loopback name, or its Origin header (when present) is not a
// loopback origin (http or https, a loopback host). A request that came
// over another interface, or whose local address is unknown, passes:
// DNS rebinding only reaches servers the victim's browser sees at a
// loopback address.
func Check(r *http.Request) error {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !IsHost(local.String()) {
		return nil
	}
	if !IsHost(r.Host) {
		return fmt.Errorf("forbidden: Host %q is not a loopback name; this server listens on %s and answers only requests addressed to localhost, 127.0.0.1 or [::1]", r.Host, local)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !isOrigin(origin) {
		return fmt.Errorf("forbidden: Origin %q is not a loopback origin; a page from another site may not use this server", origin)
	}
	return nil
}

// isOrigin reports whether an Origin header names a page served from a
// loopback host.
func isOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // "null" (a sandboxed or file: page) included
	}
	return IsHost(u.Host)
}

// Forbid answers a request Check refused: 403 with the reason, and the
// connection closed without reading more of it (net/http would otherwise
// drain a small unread body, which a dripping client holds open).
func Forbid(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	http.Error(w, err.Error(), http.StatusForbidden)
}

// Guard serves next only the requests Check lets through; the others get
// Forbid.
func Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Check(r); err != nil {
			Forbid(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
