package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validate's agent-plugin count is the length of the list below it: the
// agent.claude the loader adds is counted and marked; one the story
// declares is counted and not marked.
func TestValidateAgentCountMatchesList(t *testing.T) {
	const base = "app: {id: c}\nroot: a\nstates:\n  a: {terminal: true}\n"
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"no agents declared", "",
			"app.yaml: ok (1 state, 0 intents, 1 agent plugin)\n  agent.claude  builtin.claude_cli  " + injectedNote + "\n"},
		{"one declared, the default added", "agent_plugins:\n  agent.x: {plugin: subprocess, command: python3}\n",
			"app.yaml: ok (1 state, 0 intents, 2 agent plugins)\n  agent.claude  builtin.claude_cli  " + injectedNote + "\n  agent.x  subprocess\n"},
		{"agent.claude declared", "agent_plugins:\n  agent.claude: {plugin: builtin.claude_cli, model: claude-haiku-4-5}\n",
			"app.yaml: ok (1 state, 0 intents, 1 agent plugin)\n  agent.claude  builtin.claude_cli  model claude-haiku-4-5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(base+tc.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			code, out, errs := runCLI(t, "", "validate", "app.yaml")
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("validate (-want +got):\n%s", diff)
			}
		})
	}
}
