package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// A failed agent call whose bind reads its submission (result.submitted.x)
// binds nothing: kitsoki run reports the call's own error, exit 4 without
// on_error, the on_error redirect with it, and the trace holds no
// machine.error (before, the bind faulted: exit 5, "bind name: cannot
// fetch nope from <nil>").
func TestRunFailedCallDoesNotBind(t *testing.T) {
	const app = "testdata/bind-on-failure/app.yaml"
	tests := []struct {
		intent string
		code   int
		stdout []string
		stderr string
	}{
		{"plain", exitAgent, []string{"intake: before"},
			"error: host.agent.decide: agent: schema_invalid: /: required: missing property 'nope'\n"},
		{"handled", exitOK, []string{"failed: agent: schema_invalid: /: required: missing property 'nope'"},
			"agent error: host.agent.decide (call handled, call_id 8274df170229b902) schema_invalid: /: required: missing property 'nope' — on_error → failed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.intent, func(t *testing.T) {
			tr := filepath.Join(t.TempDir(), "t.jsonl")
			code, out, errs := runCLI(t, "", "run", app, "--session", "s1", "--trace", tr, "--intents", tt.intent)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errs, tt.stderr) || strings.Contains(errs, "bind name") {
				t.Errorf("stderr lacks %q (or names the bind):\n%s", tt.stderr, errs)
			}
			evs, err := trace.ReadFile(tr)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Kind == trace.KindMachineError {
					t.Errorf("machine.error in the trace: %v", ev.Payload)
				}
				if ev.Kind == trace.KindWorldUpdate {
					if set, _ := ev.Payload["set"].(map[string]any); set != nil {
						if _, ok := set["name"]; ok {
							t.Errorf("the failed call bound name: %v", ev.Payload)
						}
					}
				}
			}
		})
	}
}
