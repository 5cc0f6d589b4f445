package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const personaKeysStory = `app: {id: persona-keys, context: "We review expense claims."}
hosts: [host.agent.decide]
agents:
  judge: {system_prompt: "Judge.", effort: medium, provider: cheap}
  plain: {system_prompt: "Plain.", provider: thoughtful}
providers:
  cheap: {model: provider-model, env: {X: "1"}}
  thoughtful: {model: provider-model, effort: high}
root: s
states:
  s:
    write_mode: read_only
    on_enter:
      - invoke: host.agent.decide
        id: pick
        with: {agent: judge, prompt: "Pick one.", schema: schemas/v.json}
      - invoke: host.agent.decide
        id: bare
        with: {prompt: "Pick one.", schema: schemas/v.json}
    terminal: true
`

// A persona's effort: and provider: reach the call (a route's or
// with.provider win; a provider's effort: applies when the persona sets
// none), app.context: comes before every system prompt, and a
// write_mode: read_only room makes its calls read-only.
func TestPersonaKeysReachTheCall(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "schemas"), 0o755)
	os.WriteFile(filepath.Join(dir, "schemas", "v.json"), []byte(`{"type":"object"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(personaKeysStory), 0o644)
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pick, bare := st.States["s"].OnEnter[0].Invoke, st.States["s"].OnEnter[1].Invoke
	var got []seen
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	tests := []struct {
		name                           string
		inv                            *story.Invoke
		with                           map[string]any
		route                          *Route
		effort, provider, systemPrompt string
	}{
		{"persona defaults", pick, map[string]any{"agent": "judge", "prompt": "Pick one.", "schema": "schemas/v.json"}, nil,
			"medium", "cheap", "We review expense claims.\n\nJudge."},
		{"a route's effort wins", pick, map[string]any{"agent": "judge", "prompt": "Pick one.", "schema": "schemas/v.json"},
			&Route{Profile: "claude", Effort: "low"}, "low", "cheap", "We review expense claims.\n\nJudge."},
		{"the provider's effort under none of the persona's", pick, map[string]any{"agent": "plain", "prompt": "Pick one.", "schema": "schemas/v.json"}, nil,
			"high", "thoughtful", "We review expense claims.\n\nPlain."},
		{"no persona: the context alone", bare, map[string]any{"prompt": "Pick one.", "schema": "schemas/v.json"}, nil,
			"", "", "We review expense claims."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			routes := map[*story.Invoke]*Route{}
			if tt.route != nil {
				routes[tt.inv] = tt.route
			}
			h := New(st, reg, trace.NewMemSink(), WithBuiltin(recorder("builtin", &got)), WithRoutes(routes))
			defer h.Close()
			res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.decide", Args: tt.with, Invoke: tt.inv, Turn: 1, State: "s"})
			if err != nil || res.Err != nil {
				t.Fatalf("dispatch: %v %v", err, res.Err)
			}
			c := got[0].ci
			if d := cmp.Diff([]any{tt.effort, tt.provider, tt.systemPrompt, true},
				[]any{c.Effort, c.ProviderName, c.Persona.SystemPrompt, c.ReadOnly}); d != "" {
				t.Errorf("effort, provider, system prompt, read-only (-want +got):\n%s", d)
			}
		})
	}
	if st.Agents["judge"].SystemPrompt != "Judge." {
		t.Errorf("the story's persona was changed: %q", st.Agents["judge"].SystemPrompt)
	}
}
