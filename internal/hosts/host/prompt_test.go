package host

import (
	"os"
	"path/filepath"
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
