package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// TestBuiltinPathUsesTheClaudeDeclaration runs an invoke without agent:
// (the built-in claude path) against a fake claude script and checks that
// agent.claude's command:, model:, args: and env: reach the CLI, and that a
// ${VAR} value from env: stays out of the trace.
func TestBuiltinPathUsesTheClaudeDeclaration(t *testing.T) {
	const secret = "probe-secret-0123456789"
	t.Setenv("KITSOKI_WIRING_PROBE_SRC", secret)
	dir := t.TempDir()
	argsOut, envOut := filepath.Join(dir, "args.txt"), filepath.Join(dir, "env.txt")
	script := filepath.Join(dir, "fake-claude")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
printf '%s\n' "$@" > '`+argsOut+`'
printf '%s' "$KITSOKI_WIRING_PROBE" > '`+envOut+`'
cat > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"hello from the fake","session_id":"s-1","total_cost_usd":0,"usage":{}}'
`), 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte(`app: {id: wiring}
hosts: [host.agent.ask]
agent_plugins:
  agent.claude:
    plugin: builtin.claude_cli
    command: `+script+`
    model: claude-wiring-model
    args: ["--max-turns", "3"]
    env: {KITSOKI_WIRING_PROBE: "${KITSOKI_WIRING_PROBE_SRC}"}
world:
  answer: {type: string, default: ""}
root: a
states:
  a:
    view: "answer: {{ world.answer }}"
    on_enter:
      - invoke: host.agent.ask
        with: {prompt: "Say hello."}
        bind: {answer: stdout}
    terminal: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "t.jsonl")
	code, out, errs := runCLI(t, "", "run", app, "--trace", tr)
	if code != exitOK || !strings.Contains(out, "answer: hello from the fake") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	b, err := os.ReadFile(argsOut)
	if err != nil {
		t.Fatal(err)
	}
	args := "\n" + string(b)
	for _, want := range []string{"\n-p\n", "\n--model\nclaude-wiring-model\n", "\n--max-turns\n3\n"} {
		if !strings.Contains(args, want) {
			t.Errorf("CLI args lack %q:%s", strings.TrimSpace(want), args)
		}
	}
	if env, _ := os.ReadFile(envOut); string(env) != secret {
		t.Errorf("agent.claude env: did not reach the CLI (got %q)", env)
	}
	if b, _ := os.ReadFile(tr); strings.Contains(string(b), secret) {
		t.Error("the env: secret reached the trace")
	}
}

// TestGivenTitleIsNotAgentOwned: a run started with a title (as
// create_task_kitsoki does) keeps it, and its agent calls are not offered
// the title tool.
func TestGivenTitleIsNotAgentOwned(t *testing.T) {
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		title string
		owned bool
	}{{"", true}, {"Greeting round", false}} {
		rt, err := openRuntime(st, runtimeConfig{session: "s", trace: filepath.Join(t.TempDir(), "t.jsonl"), title: tc.title, logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		if rt.Session().Title() != tc.title || rt.Session().TitleOwned() != tc.owned {
			t.Errorf("title %q: got %q, agent-owned %v", tc.title, rt.Session().Title(), rt.Session().TitleOwned())
		}
		rt.Close()
	}
}
