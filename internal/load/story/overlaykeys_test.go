package story

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// app.context_path reads the story's context from a prompt file (its
// includes resolved); off_path.persona gives the off-path voice its own
// instructions over its agent's, keeping the agent's model; a meta mode's
// cwd: (with ${VAR} expanded) and tools: make it a persona of its own;
// group: and default: are kept for the /meta <group> commands.
func TestOverlayKeys(t *testing.T) {
	abs, _ := filepath.Abs("testdata/overlaykeys")
	abs, _ = filepath.EvalSymlinks(abs)
	s, err := Load("testdata/overlaykeys/app.yaml", WithLookupEnv(mapEnv(map[string]string{"WORK_DIR": "work"})))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.App.Context, "The story of a lighthouse. Be brief."; got != want {
		t.Errorf("context = %q, want %q", got, want)
	}
	op := s.Agents[s.OffPath.Agent]
	if op == nil || op.SystemPrompt != "You are the lighthouse keeper; answer in one line." || op.Model != "small" {
		t.Errorf("off-path persona = %+v", op)
	}
	edit, ask := s.MetaModes["story.edit"], s.MetaModes["story.ask"]
	if d := cmp.Diff([]any{"story", true, "story", false}, []any{edit.Group, edit.Default, ask.Group, ask.Default}); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	if got := s.Agents[edit.Agent].Cwd; got != filepath.Join(abs, "work") {
		t.Errorf("story.edit cwd = %q", got)
	}
	if got := s.Agents[ask.Agent]; got.Cwd != "" || !cmp.Equal(got.Tools, []string{"Read"}) {
		t.Errorf("story.ask persona = %+v", got)
	}
}
