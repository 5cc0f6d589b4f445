package testrunner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// world_override: sets the world before the turn's guards run (and traces
// it); use_orchestrator: true is what kitsoki always does.
func TestFixtureWorldOverride(t *testing.T) {
	res := runKeys(t, "testdata/keys/more/override_pass.yaml")
	if len(res) != 1 || !res[0].Passed {
		t.Fatalf("want a pass, got:\n%s", report(res, true))
	}
	res = runKeys(t, "testdata/keys/more/override_bad_type.yaml")
	got := report(res, false)
	// A value that does not fit its declared type is used as given, with
	// a warning (the fixture's expect_world sees it).
	want := "PASS  override_bad_type.yaml\n" +
		"  warning: turn 1: world_override: world key \"count\" is declared int; the seeded value \"many\" is not an int; the flow uses it as given\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}

// Keys whose value kitsoki cannot honour are errors naming the file, the
// position and what to do.
func TestFixtureKeyErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad_mode.yaml", "testdata/keys/more/bad_mode.yaml:3:7: fixture.mode: unknown execution mode \"stagd\": use one_shot or staged"},
		{"files_both.yaml", "testdata/keys/more/files_both.yaml:6:5: fixture.expect_files[0]: must_not_exist: true cannot be combined with content_matches:"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadFixtures(keysApp, filepath.Join("testdata/keys/more", tt.file))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// expect_files: checks existence, content and absence once the flow ends,
// each failure with its own message.
func TestFixtureExpectFiles(t *testing.T) {
	got := report(runKeys(t, "testdata/keys/more/files.yaml"), false)
	want := "FAIL  files.yaml\n  FAIL  [session]\n" +
		"  ✗ expect_files[1] (present.txt): content does not match /^goodbye/: \"hello from the fixture\\n\"\n" +
		"  ✗ expect_files[2] (absent.txt): no such file\n" +
		"  ✗ expect_files[3] (present.txt): the file exists, want must_not_exist\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}

// An expect_files: path outside the workspace is a setup error.
func TestFixtureExpectFilesOutside(t *testing.T) {
	fxs, err := LoadFixtures(keysApp, "testdata/keys/more/files_outside.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	_, err = r.Prepare(fxs[0])
	if err == nil || !strings.Contains(err.Error(), `files_outside.yaml:6:5: expect_files[0].path: "/etc/hostname" is outside the workspace`) {
		t.Errorf("error = %v", err)
	}
}

// starlark_inspect_cassette: answers the real script's ctx.probe calls
// from the cassette; a cassette that does not exist is a setup error.
func TestFixtureInspectCassette(t *testing.T) {
	const app = "testdata/inspect/app.yaml"
	fxs, err := LoadFixtures(app, "testdata/inspect/flows/three.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := rep.Results; len(res) != 1 || !res[0].Passed {
		t.Fatalf("want a pass, got:\n%s", report(res, true))
	}
	fxs, err = LoadFixtures(app, "testdata/inspect/flows/missing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Prepare(fxs[0])
	if err == nil || !strings.Contains(err.Error(), "missing.yaml: starlark_inspect_cassette: inspect cassette: open ") {
		t.Errorf("error = %v", err)
	}
}

// Kitsoki's work-from-a-picker shape: the seed misfits its declared type
// and is used as given, and an intent the picker has no arm for reaches
// the workbench through the story's free-form fallback.
func TestFlowFreeFormFallback(t *testing.T) {
	res := runFixtures(t, "testdata/freeform/app.yaml", "testdata/freeform/work_from_picker.yaml").Results
	got := report(res, false)
	want := "PASS  work_from_picker.yaml\n" +
		"  warning: initial_world: world key \"results\" is declared string; the seeded value [{\"id\":\"1\",\"title\":\"Seed ticket\"}] is not a string; the flow uses it as given\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}
