// Command echo-mcp is an example kitsoki mcp_http plugin: the echo agent
// served as an MCP "ask" tool over Streamable HTTP with the Go SDK. See
// README.md.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/plugin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7301", "address to listen on (port 0 picks a free one)")
	path := flag.String("path", "/mcp", "endpoint path")
	flag.Parse()
	if err := run(*addr, *path, os.Getenv("ECHO_MCP_TOKEN")); err != nil {
		fmt.Fprintln(os.Stderr, "echo-mcp:", err)
		os.Exit(1)
	}
}

func run(addr, path, token string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var h http.Handler = plugin.MCPHandler(echo.Agent{}, plugin.WithServerInfo("echo-mcp", "1"), plugin.WithEndpointPath(path))
	if token != "" {
		h = requireBearer(token, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// The first stdout line tells scripts and tests where to connect.
	fmt.Printf("listening on http://%s%s\n", ln.Addr(), path)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// requireBearer refuses requests without "Authorization: Bearer <token>".
func requireBearer(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "missing or wrong bearer token (set Authorization: Bearer $ECHO_MCP_TOKEN)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
