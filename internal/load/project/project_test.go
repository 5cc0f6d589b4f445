package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadStoryDirs(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Load(dir)
	if err != nil || cfg.Path != "" || cfg.StoryDirs != nil {
		t.Fatalf("no file: %+v, %v", cfg, err)
	}
	write(t, dir, File, "story_dirs: [stories, /abs/lib]\n")
	cfg, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{filepath.Join(dir, "stories"), "/abs/lib"}, cfg.StoryDirs); d != "" {
		t.Errorf("story_dirs (-want +got):\n%s", d)
	}
	// The local file wins.
	write(t, dir, LocalFile, "story_dirs: mine\n")
	if cfg, _ = Load(dir); !slices_equal(cfg.StoryDirs, []string{filepath.Join(dir, "mine")}) {
		t.Errorf("with the local file: %v", cfg.StoryDirs)
	}
}

func slices_equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestParseErrors(t *testing.T) {
	src := "story_dir: [a]\nstory_dirs: {a: b}\nharness_profiles: {x: {backend: claude}}\nintercept: {enabled: true}\n"
	_, err := Parse([]byte(src), "p/.kitsoki.yaml")
	want := strings.Join([]string{
		`p/.kitsoki.yaml:1:1: story_dir: unknown key "story_dir" (did you mean "story_dirs"?) (known: story_dirs, harness_profiles, default_profile, intercept, mining, root, project_profile, profiles, story_profiles, agent_profiles)`,
		`p/.kitsoki.yaml:2:13: story_dirs: story_dirs must be a list of directories (e.g. [stories, ../shared/stories]), got a mapping`,
		`p/.kitsoki.yaml:4:1: intercept: "intercept" is a Kitsoki key kitsoki does not act on: kitsoki has no intercept command (the pre-model prompt gate); route typed text with kitsoki run instead; remove it`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
