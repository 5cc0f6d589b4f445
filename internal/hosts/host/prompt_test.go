package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Prompt files named at run time (a templated with.prompt or prompt_path)
// stay inside the story's workspace, like the ones named at load.
func TestRunTimePromptFilesStayInTheWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"ws/.git/HEAD":      "",
		"ws/s/app.yaml":     "app: {id: p}\nroot: a\nstates:\n  a: {}\n",
		"ws/shared/ok.md":   "hello {{ args.name }}",
		"outside/secret.md": "TOPSECRET",
	})
	ws := filepath.Join(tmp, "ws")
	if err := os.Symlink(filepath.Join(tmp, "outside", "secret.md"), filepath.Join(ws, "s", "link.md")); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(filepath.Join(ws, "s", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := New(st, nil, nil)
	defer h.Close()
	const hint = " (widen the workspace with --workspace DIR)"
	tests := []struct {
		name string
		with map[string]any
		want string // the prompt, or the error
	}{
		{"prompt_path in the work tree", map[string]any{"prompt_path": "../shared/ok.md", "args": map[string]any{"name": "Ada"}}, "hello Ada"},
		{"prompt_path outside", map[string]any{"prompt_path": "../../outside/secret.md"},
			`prompt file ../../outside/secret.md: "../../outside/secret.md" is outside the workspace ` + ws + hint},
		{"missing prompt_path outside", map[string]any{"prompt_path": "../../outside/none.md"},
			`prompt file ../../outside/none.md: "../../outside/none.md" is outside the workspace ` + ws + hint},
		{"prompt naming an outside file", map[string]any{"prompt": "../../outside/secret.md"},
			`prompt file ../../outside/secret.md: "../../outside/secret.md" is outside the workspace ` + ws + hint},
		{"symlinked prompt", map[string]any{"prompt": "link.md"},
			`prompt file link.md: "link.md" leads through a symlink to ` + filepath.Join(tmp, "outside", "secret.md") + `, outside the workspace ` + ws + hint},
		{"inline text that only looks like an outside path", map[string]any{"prompt": "../../outside/none.md"}, "../../outside/none.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.renderPrompt(tt.with)
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("renderPrompt = %q, want %q", got, tt.want)
			}
		})
	}
}

// Kitsoki's task form: the prompt is context.prompt rendered with
// context.args, the schema acceptance.schema; converse's question is the
// prompt of a call that gives none.
func TestKitsokiCallForms(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"ws/.git/HEAD":          "",
		"ws/s/app.yaml":         "app: {id: p}\nroot: a\nstates:\n  a: {}\n",
		"ws/s/prompts/fix.md":   "fix {{ args.ticket }}",
		"ws/s/schemas/out.json": `{"type": "object"}`,
	})
	st, err := story.Load(filepath.Join(tmp, "ws", "s", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := New(st, nil, nil)
	defer h.Close()
	for _, tt := range []struct {
		name string
		with map[string]any
		want string
	}{
		{"context.prompt file with context.args", map[string]any{"context": map[string]any{"prompt": "prompts/fix.md", "args": map[string]any{"ticket": "B-1"}}}, "fix B-1"},
		{"context.prompt text", map[string]any{"context": map[string]any{"prompt": "just do it"}}, "just do it"},
		{"with.prompt wins", map[string]any{"prompt": "top", "context": map[string]any{"prompt": "ctx"}}, "top"},
		{"question", map[string]any{"question": "what now?"}, "what now?"},
		{"none", map[string]any{"context": map[string]any{}}, "with.prompt is required (a prompt file relative to the story directory, or the prompt text)"},
	} {
		got, err := h.renderPrompt(tt.with)
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: renderPrompt = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := schemaPath(map[string]any{"acceptance": map[string]any{"schema": "schemas/out.json"}}); got != "schemas/out.json" {
		t.Errorf("acceptance.schema: %q", got)
	}
	if got := schemaPath(map[string]any{"schema": "a.json", "acceptance": map[string]any{"schema": "b.json"}}); got != "a.json" {
		t.Errorf("with.schema wins: %q", got)
	}
}

// A prompt file named at run time resolves in the prompt overlay first and
// has its include, extends and import tags resolved along the prompt
// search path, as a prompt file named literally does at load.
func TestRunTimePromptFilesAssembleTheirTags(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"ws/.git/HEAD":        "",
		"ws/s/app.yaml":       "app: {id: p}\nprompts: {shared: [../shared], overlay: ../ov}\nroot: a\nstates:\n  a: {}\n",
		"ws/s/prompts/a.md":   `{% include "@shared/frag.md" %} for {{ args.name }}`,
		"ws/s/prompts/b.md":   "Tone: {% block tone %}cold{% endblock %}.",
		"ws/s/prompts/bad.md": `{% include "nowhere.md" %}`,
		"ws/shared/frag.md":   "Be kind",
		"ws/ov/prompts/b.md":  `{% extends "@story/prompts/b.md" %}{% block tone %}warm{% endblock %}`,
	})
	st, err := story.Load(filepath.Join(tmp, "ws", "s", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := New(st, nil, nil)
	defer h.Close()
	for _, tt := range []struct{ path, want string }{
		{"prompts/a.md", "Be kind for Ada"},
		{"prompts/b.md", "Tone: warm."},
		{"prompts/bad.md", `prompt file prompts/bad.md: prompts/bad.md:1: {% include "nowhere.md" %}: no such file`},
	} {
		got, err := h.renderPrompt(map[string]any{"prompt_path": tt.path, "args": map[string]any{"name": "Ada"}})
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s = %q, want %q", tt.path, got, tt.want)
		}
	}
}
