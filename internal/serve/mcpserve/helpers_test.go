package mcpserve

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

const (
	configuration = toolserver.Configuration
	external      = toolserver.External
)

func mustProfile(t testing.TB, s toolserver.Surface) toolserver.Profile {
	t.Helper()
	p, err := toolserver.NewProfile(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testRoot(t testing.TB) string {
	t.Helper()
	abs, err := filepath.Abs("testdata/root")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// fakeLoader loads good/app.yaml as a small story and fails anything else
// with two diagnostics.
func fakeLoader(_ context.Context, path, _ string) (*story.Story, error) {
	if filepath.Base(filepath.Dir(path)) != "good" {
		return nil, errors.New("app.yaml:3:1: states: unknown state \"mrege\"\napp.yaml:9:5: root: is required")
	}
	return &story.Story{
		App:  story.App{ID: "good", Version: "1.0", Author: "Ada", License: "MIT"},
		Root: "intake",
		States: map[string]*story.State{
			"intake":   {Description: "Waiting.", On: map[string][]*story.Arm{"submit": nil}},
			"approved": {Terminal: true},
		},
		Intents: map[string]*story.Intent{"submit": {Description: "File a claim.", SlotOrder: []string{"text", "amount"}}},
		Agents:  map[string]*story.Persona{"auditor": {Model: "claude-sonnet-4-6"}},
		Plugins: map[string]agent.Declaration{
			"agent.claude": {Plugin: "builtin.claude_cli", Enabled: true},
			"agent.fixer":  {Plugin: "subprocess", Command: "/bin/fixer", Enabled: true, Env: map[string]string{"API_KEY": "s3cret-value"}},
		},
		Warnings: []story.Diagnostic{{Pos: story.Pos{File: "app.yaml", Line: 2, Col: 1}, Path: "providers", Message: "ignored"}},
	}, nil
}

func fakeStartRun(_ context.Context, req StartRunRequest) (*StartRunResult, error) {
	if len(req.Say) > 0 {
		return &StartRunResult{RunID: "run-1", State: "intake:said:" + strings.Join(req.Say, ","),
			Routes: []RouteResult{{Input: req.Say[0], Tier: "router", Intent: "submit", Confidence: 0.9}}}, nil
	}
	return &StartRunResult{RunID: "run-1", State: "intake:" + strings.Join(req.Intents, ","), Terminal: false}, nil
}

// fakePlugins is a PluginControl with one active plugin.
type fakePlugins struct{}

func (fakePlugins) PluginStatus() []PluginStatus {
	return []PluginStatus{{Alias: "agent.tagger", State: "active", Tools: []string{"kitsoki_agent_tagger_add_tag"}}}
}

func (fakePlugins) SetPluginEnabled(_ context.Context, alias string, enabled bool) (PluginStatus, error) {
	state := "disabled"
	if enabled {
		state = "active"
	}
	return PluginStatus{Alias: alias, State: state, Tools: []string{}}, nil
}

func listen(t testing.TB) *toolserver.HTTPServer {
	t.Helper()
	h, err := toolserver.ListenHTTP("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func open(t testing.TB, h *toolserver.HTTPServer, cfg Config) *toolserver.Session {
	t.Helper()
	s, err := Open(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

var generations = []mcptest.Generation{mcptest.Modern, mcptest.Legacy}

const modern = mcptest.Modern

// testClient is an mcp-go client of an outside session.
type testClient struct{ *mcptest.Client }

func connect(t testing.TB, url, token string, gen mcptest.Generation) *testClient {
	t.Helper()
	return &testClient{mcptest.Connect(t, url, token, gen, true)}
}

// mustCall calls a tool that must answer without a protocol error and
// returns its text and structured content.
func (tc *testClient) mustCall(t testing.TB, name string, args map[string]any) (string, map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := tc.CallTool(ctx, callReq(name, args))
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
