package mcpserve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

func TestServeStdio(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Surface: "external", Stdio: true, Stdin: serverIn, Stdout: serverOut,
			Stderr: io.Discard, Root: testRoot(t), LoadStory: fakeLoader, StartRun: fakeStartRun})
	}()
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	want := []string{ToolCreateTask, ToolInspectStory, ToolListPlugins, ToolValidateSchema, ToolValidateStory}
	if diff := cmp.Diff(want, mcptest.ToolNames(t, c)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	out, err := c.CallTool(ctx, callReq(ToolValidateStory, map[string]any{"path": "good"}))
	if err != nil || out.IsError {
		t.Fatalf("call: %v %v", err, out)
	}
	clientOut.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestServeHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Surface: "config", HTTPAddr: "127.0.0.1:0", Stderr: &stderr, Root: testRoot(t),
			LoadStory: fakeLoader, Ready: func(url, token string) { ready <- [2]string{url, token} }})
	}()
	var ep [2]string
	select {
	case ep = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("not ready")
	}
	for _, gen := range generations {
		c := connect(t, ep[0], ep[1], gen)
		if diff := cmp.Diff([]string{ToolInspectStory, ToolListPlugins, ToolValidateSchema, ToolValidateStory}, mcptest.ToolNames(t, c)); diff != "" {
			t.Errorf("%s tools (-want +got):\n%s", gen, diff)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "serving the configuration surface at "+ep[0]) || !strings.Contains(stderr.String(), "Bearer "+ep[1]) {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestServeRefusesLiveSurfaces(t *testing.T) {
	for _, s := range []string{"kanban-task", "task", "office", "task-title-pending"} {
		err := Serve(context.Background(), ServeOptions{Surface: s, Stdio: true})
		if err == nil || !strings.Contains(err.Error(), "acts on a live agent call; kitsoki mcp serve offers configuration or external") {
			t.Errorf("%s: %v", s, err)
		}
	}
	if err := Serve(context.Background(), ServeOptions{Surface: "admin"}); err == nil || !strings.Contains(err.Error(), `unknown MCP surface "admin"`) {
		t.Errorf("admin: %v", err)
	}
	if err := Serve(context.Background(), ServeOptions{HTTPAddr: "8.8.8.8:80"}); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("public address: %v", err)
	}
}

// `kitsoki mcp serve --max-body-bytes N` reaches the HTTP server.
func TestServeMaxBodyBytes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Token: "tok", MaxBodyBytes: 100, Stderr: io.Discard, Root: testRoot(t),
			LoadStory: fakeLoader, Ready: func(url, _ string) { ready <- url }})
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("Serve returned %v", err)
	}
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(strings.Repeat(" ", 101)); got != http.StatusRequestEntityTooLarge {
		t.Errorf("101 bytes: status %d, want 413", got)
	}
	if got := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); got == http.StatusRequestEntityTooLarge {
		t.Errorf("a small body was refused")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v", err)
	}
	if err := Serve(context.Background(), ServeOptions{MaxBodyBytes: -1, Stderr: io.Discard}); err == nil || !strings.Contains(err.Error(), "MaxBodyBytes -1: must be positive") {
		t.Errorf("negative limit: err = %v", err)
	}
}
