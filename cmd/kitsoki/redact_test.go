package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNeverPrintsSecrets: a plugin that leaks its ${VAR} secret on
// stderr and crashes; the error kitsoki prints (with the stderr tail), the
// logs and the trace all show REDACTED instead.
func TestRunNeverPrintsSecrets(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	t.Setenv("LEAKY_TOKEN", secret)
	dir := t.TempDir()
	write := fileWriter(t, dir)
	write("leaky.sh", "#!/bin/sh\necho \"my token is $API_KEY\" >&2\nread line\nexit 3\n", 0o755)
	write("app.yaml", `app: {id: leaky}
agent_plugins:
  agent.leaky:
    plugin: subprocess
    command: ./leaky.sh
    env: {API_KEY: "${LEAKY_TOKEN}"}
intents: {go: {}}
root: s
states:
  s:
    on:
      go:
        - target: done
          effects:
            - invoke: host.agent.ask
              agent: agent.leaky
              with: {prompt: "hi"}
  done: {terminal: true}
`, 0o644)
	tr := filepath.Join(dir, "t.jsonl")
	code, out, errs := runCLI(t, "", "--log-level", "debug", "run", filepath.Join(dir, "app.yaml"), "--trace", tr, "--intents", "go")
	if code != exitAgent {
		t.Fatalf("exit %d, want %d\n%s", code, exitAgent, errs)
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"stdout": out, "stderr": errs, "trace": string(b)} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret:\n%s", name, text)
		}
	}
	if !strings.Contains(errs, "my token is REDACTED") {
		t.Errorf("the crash detail with the redacted stderr tail was not printed:\n%s", errs)
	}
}

// TestRunNeverPrintsSecretsFromAnswers: a plugin that puts its secret in
// its answer; the story binds it and its view shows it. What kitsoki prints
// is redacted like the trace.
func TestRunNeverPrintsSecretsFromAnswers(t *testing.T) {
	const secret = "sk-live-fedcba9876543210"
	t.Setenv("LEAKY_TOKEN", secret)
	dir := t.TempDir()
	write := fileWriter(t, dir)
	write("answer.sh", "#!/bin/sh\nread line\nprintf '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"submission\":\"%s\"}}\\n' \"$API_KEY\"\nread line\n", 0o755)
	write("app.yaml", `app: {id: leaky}
agent_plugins:
  agent.leaky:
    plugin: subprocess
    command: ./answer.sh
    env: {API_KEY: "${LEAKY_TOKEN}"}
world:
  leak: {type: string, default: ""}
intents: {go: {}}
root: s
states:
  s:
    on:
      go:
        - target: done
          effects:
            - invoke: host.agent.ask
              agent: agent.leaky
              with: {prompt: "hi"}
              bind: {leak: submission}
  done: {terminal: true, view: "got {{ world.leak }}"}
`, 0o644)
	code, out, errs := runCLI(t, "", "run", filepath.Join(dir, "app.yaml"), "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "go")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if strings.Contains(out+errs, secret) || !strings.Contains(out, "got REDACTED") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
}

// fileWriter returns a function writing files into dir.
func fileWriter(t *testing.T, dir string) func(name, body string, mode os.FileMode) {
	return func(name, body string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}
