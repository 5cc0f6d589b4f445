package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestMCPServeStdio drives `kitsoki mcp serve --stdio` as an outside MCP
// client would: initialize, list the configuration tools, call one.
func TestMCPServeStdio(t *testing.T) {
	t.Chdir("../..")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"validate_story_kitsoki","arguments":{"path":"stories/hello/app.yaml"}}}`,
	}, "\n") + "\n"
	code, out, errs := runCLI(t, in, "mcp", "serve", "--stdio")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	replies := map[float64]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", line)
		}
		if id, ok := m["id"].(float64); ok {
			replies[id] = m
		}
	}
	// The server reports the version `kitsoki version` prints.
	_, vout, _ := runCLI(t, "", "version")
	info, _ := replies[1]["result"].(map[string]any)["serverInfo"].(map[string]any)
	if got := "kitsoki " + fmt.Sprint(info["version"]) + "\n"; got != vout || info["name"] != "kitsoki" {
		t.Errorf("initialize serverInfo = %v; kitsoki version prints %q", info, vout)
	}
	tools, _ := replies[2]["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, x := range tools {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, ","), "validate_story_kitsoki") || strings.Contains(strings.Join(names, ","), "submit_kitsoki") {
		t.Errorf("configuration tools = %v (want validate_story_kitsoki and no live-call tool)", names)
	}
	res, _ := replies[3]["result"].(map[string]any)
	if sc, _ := res["structuredContent"].(map[string]any); sc["ok"] != true {
		t.Errorf("validate_story_kitsoki result = %v", res)
	}
	if code, _, errs := runCLI(t, "", "mcp", "serve", "--surface", "kanban-task", "--stdio"); code == exitOK || !strings.Contains(errs, "kanban-task") {
		t.Errorf("a live surface was served: exit %d: %s", code, errs)
	}
}

// TestRunFactsReachTheCall checks that --autopilot and --tool-provider
// shape the run an agent call's MCP profile is resolved from.
func TestRunFactsReachTheCall(t *testing.T) {
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	var got *agent.Run
	demo := agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		got = call.Run
		return &agent.AskResponse{Submission: json.RawMessage(`{"text":"hi","tone":"casual","done":true}`)}, nil
	})
	rt, err := runtime.Open(st, runtime.Config{
		Agents:  runtime.Agents{Override: map[string]agent.Agent{"agent.demo": demo}},
		Session: &runtime.Session{ID: "s"},
		Tools:   runtime.Tools{Autopilot: true, Providers: []string{toolserver.StoryFilesProvider}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sess := rt.Session()
	if _, err := sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Turn(context.Background(), "greet", map[string]any{"name": "Ada"}, ""); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.Autopilot || got.HasParent || len(got.ToolProviders) != 1 || got.Live == nil || got.StoryDir != st.Dir || got.Catalog != nil {
		t.Fatalf("run = %+v", got)
	}
	p, err := toolserver.ResolveProfile("decide", &toolserver.CallContext{Autopilot: got.Autopilot, HasParent: got.HasParent, TitleOwned: got.TitleOwned, ToolProviders: got.ToolProviders})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.String(); strings.Contains(s, "user-question") || !strings.Contains(s, "provider:story-files") {
		t.Errorf("profile = %s: an autopilot root gets no question group, and the provider is attached", s)
	}
	code, _, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--tool-provider", "nope", "--intents", "bye")
	if code != exitFailure || !strings.Contains(errs, "--tool-provider") {
		t.Errorf("unknown provider: exit %d: %s", code, errs)
	}
}
