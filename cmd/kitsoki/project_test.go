package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// .kitsoki.yaml's story_dirs are where @kitsoki/NAME imports resolve; a bad
// file stops every command with the position and a did-you-mean.
func TestProjectConfigStoryDirs(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"app.yaml":           "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: \"@kitsoki/leaf\"\n    entry: s\n    exits: {done: {to: main}}\n",
		"lib/leaf/app.yaml":  "app: {id: leaf}\nroot: s\nexits: {done: {}}\nstates:\n  s: {on: {go: [{target: \"@exit:done\"}]}}\nintents: {go: {}}\n",
		".kitsoki.yaml":      "story_dirs: [lib]\n",
		"bad/.kitsoki.yaml":  "story_dir: [lib]\n",
		"bad/placeholder.md": "",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KITSOKI_STORIES_PATH", "")
	t.Setenv("KITSOKI_REPO", "")
	t.Chdir(dir)
	if code, out, errs := runCLI(t, "", "validate", "app.yaml"); code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	t.Chdir(filepath.Join(dir, "bad"))
	code, _, errs := runCLI(t, "", "validate", filepath.Join(dir, "app.yaml"))
	if code != exitUsage || !strings.Contains(errs, `.kitsoki.yaml:1:1: story_dir: unknown key "story_dir" (did you mean "story_dirs"?)`) {
		t.Errorf("bad config: exit %d\n%s", code, errs)
	}
}
