package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const ideStory = `
app: {id: ide-world}
world:
  surface: {type: string, default: ""}
intents:
  go: {}
root: idle
states:
  idle:
    on:
      go:
        - when: "world.ide.connected"
          target: idle
          effects: [{set: {surface: editor}}]
        - target: idle
          effects: [{set: {surface: terminal}}]
`

// A live run projects world.ide.connected from the run's editor (a VS
// Code family editor is connected); a flow-like run (not live) and a
// cassette replay are disconnected whatever the editor.
func TestIDEConnectedFollowsTheRunsEditor(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(ideStory), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	surface := func(t *testing.T, editor string, live bool) any {
		t.Helper()
		t.Setenv("KITSOKI_EDITOR", editor)
		rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: live}, Session: &runtime.Session{ID: "s"}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ctx := context.Background()
		if _, err := rt.Session().Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Session().Turn(ctx, "go", nil, ""); err != nil {
			t.Fatal(err)
		}
		return rt.Session().World()["surface"]
	}
	for _, tt := range []struct {
		editor string
		live   bool
		want   string
	}{
		{"code", true, "editor"},
		{"cursor --wait", true, "editor"},
		{"vim", true, "terminal"},
		{"code", false, "terminal"},
	} {
		if got := surface(t, tt.editor, tt.live); got != tt.want {
			t.Errorf("editor %q, live %v: surface %v, want %s", tt.editor, tt.live, got, tt.want)
		}
	}
}
