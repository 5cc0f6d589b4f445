package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// The composition stories pass their flows: the child alone, and the
// parent importing it.
func TestFlowsImportStories(t *testing.T) {
	for _, tt := range []struct{ app, want string }{
		{"../../stories/tune-up/app.yaml", "PASS  standalone.yaml\n\nSummary: 1/1 flows pass\nPASS\n"},
		{"../../stories/bike-shop/app.yaml", "PASS  scrapped.yaml\nPASS  tune_and_collect.yaml\n\nSummary: 2/2 flows pass\nPASS\n"},
	} {
		code, out, errs := runCLI(t, "", "test", "flows", tt.app)
		if code != 0 || out != tt.want {
			t.Errorf("%s: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", tt.app, code, out, tt.want, errs)
		}
	}
}

// @kitsoki/NAME resolves through --stories-path (validate, test flows);
// unresolved, the story does not load (exit 2) and the error names the
// search path tried.
func TestStoriesPathFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) { testkit.WriteFile(t, dir, name, body) }
	write("app.yaml", "app: {id: p}\nintents: {go: {}}\nroot: main\nstates:\n  main:\n    on:\n      go:\n        - target: leaf\nimports:\n  leaf:\n    source: \"@kitsoki/leaf\"\n    entry: s\n")
	write("lib/leaf/app.yaml", "app: {id: leaf}\nroot: s\nstates:\n  s: {view: \"leaf\"}\n")
	write("flows/go.yaml", "test_kind: flow\napp: ../app.yaml\nturns:\n  - intent: {name: go, slots: {}}\n    expect_state: leaf.s\n")
	app := filepath.Join(dir, "app.yaml")
	t.Setenv("KITSOKI_STORIES_PATH", "")
	t.Setenv("KITSOKI_REPO", "")

	if code, out, errs := runCLI(t, "", "validate", app, "--stories-path", filepath.Join(dir, "lib")); code != 0 {
		t.Errorf("validate: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "", "test", "flows", app, "--stories-path", filepath.Join(dir, "lib")); code != 0 || !strings.Contains(out, "PASS  go.yaml") {
		t.Errorf("test flows: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "", "validate", app, "--stories-path", filepath.Join(dir, "none"))
	want := "app.yaml:11:13: imports.leaf.source: cannot resolve @kitsoki/leaf: no leaf/app.yaml in the stories search path " + filepath.Join(dir, "none")
	if code != exitLoad || !strings.Contains(out+errs, want) {
		t.Errorf("unresolved: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, exitLoad, want, out, errs)
	}
}
