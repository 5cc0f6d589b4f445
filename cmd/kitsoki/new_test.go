package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The runs each template's cassette records and replays.
var templateRuns = map[string][]string{
	"agent":    {"--intents", "submit note='the build fails on main',again,submit note='add a dark mode',bye"},
	"chat":     {"--say", "hello there", "--say", "what can you do?", "--say", "bye"},
	"pipeline": {"--intents", "start file=samples/notes.txt"},
}

// Every template passes validate, test flows and run --cassette at once,
// with no model and no network: PATH holds nothing, so neither the
// stand-in agent (python3) nor any program could start.
func TestNewTemplates(t *testing.T) {
	for _, tmpl := range templateNames {
		t.Run(tmpl, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-"+tmpl)
			code, out, errs := runCLI(t, "", "new", dir, "--template", tmpl)
			if code != exitOK || !strings.HasPrefix(out, "wrote "+dir+" (template "+tmpl+": ") {
				t.Fatalf("new: exit %d\n%s%s", code, out, errs)
			}
			for _, f := range []string{"app.yaml", "README.md", ".gitignore", "flows/main.yaml", "cassettes/main.yaml", "agents/stand_in.py"} {
				if !strings.Contains(out, "\n  "+f+"\n") {
					t.Errorf("new did not list %s:\n%s", f, out)
				}
			}
			app, _ := os.ReadFile(filepath.Join(dir, "app.yaml"))
			if !strings.Contains(string(app), "app: {id: my-"+tmpl+", version: 0.1.0, title: \"My "+tmpl+"\"}") || strings.Contains(string(app), "__") {
				t.Errorf("app.yaml is not filled in:\n%s", app)
			}
			t.Setenv("PATH", t.TempDir())
			if code, out, errs := runCLI(t, "", "validate", dir); code != exitOK || errs != "" {
				t.Errorf("validate: exit %d\n%s%s", code, out, errs)
			}
			if code, out, errs := runCLI(t, "", "test", "flows", dir); code != exitOK || !strings.Contains(out, "flows pass\nPASS\n") {
				t.Errorf("test flows: exit %d\n%s%s", code, out, errs)
			}
			args := append([]string{"run", dir, "--cassette", filepath.Join(dir, "cassettes", "main.yaml"), "--cassette-strict",
				"--trace", filepath.Join(t.TempDir(), "t.jsonl")}, templateRuns[tmpl]...)
			if code, out, errs := runCLI(t, "", args...); code != exitOK || strings.Contains(errs, "warning") {
				t.Errorf("run --cassette: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// The templates' cassettes are what recording their runs with the
// stand-in agents gives, byte for byte (KITSOKI_WRITE_TEMPLATES=1 writes
// them): the stand-ins, prompts and cassettes cannot drift apart.
func TestNewTemplateCassettesAreRecorded(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the templates' stand-in agents need python3")
		}
		t.Skip("the templates' stand-in agents need python3")
	}
	write := os.Getenv("KITSOKI_WRITE_TEMPLATES") == "1"
	for _, tmpl := range templateNames {
		t.Run(tmpl, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "recorded")
			if _, err := scaffold(dir, tmpl); err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(t.TempDir(), "main.yaml")
			args := append([]string{"run", dir, "--record", rec, "--trace", filepath.Join(t.TempDir(), "t.jsonl")}, templateRuns[tmpl]...)
			if code, out, errs := runCLI(t, "", args...); code != exitOK {
				t.Fatalf("record: exit %d\n%s%s", code, out, errs)
			}
			got, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(string(got), "app_id: recorded\n", "app_id: __APP_ID__\n")
			file := filepath.Join("templates", tmpl, "cassettes", "main.yaml")
			if write {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			have, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (KITSOKI_WRITE_TEMPLATES=1 writes it)", err)
			}
			if d := cmp.Diff(want, string(have)); d != "" {
				t.Errorf("%s is not what recording gives (KITSOKI_WRITE_TEMPLATES=1 rewrites it) (-recorded +file):\n%s", file, d)
			}
		})
	}
}

// kitsoki new refuses an existing directory, a name that cannot be an id
// and an unknown template, saying what to do.
func TestNewRefusals(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", dir}, exitFailure, "kitsoki new: " + dir + " already exists and is not empty: pick another name, or remove it first\n"},
		{[]string{"new", filepath.Join(t.TempDir(), "My Story")}, exitFailure, `kitsoki new: "My Story" cannot be a story id (lower-case letters, digits, - and _, starting with a letter): pick a name like "my-story"` + "\n"},
		{[]string{"new", filepath.Join(t.TempDir(), "s"), "--template", "chatt"}, exitUsage, `kitsoki new: --template "chatt": unknown template (one of agent, chat, pipeline)` + "\n"},
		{[]string{"new"}, exitUsage, "kitsoki new: accepts 1 arg(s), received 0"},
	} {
		code, out, errs := runCLI(t, "", tc.args...)
		if code != tc.code || out != "" || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("%v: exit %d\n%s%s\nwant %q", tc.args, code, out, errs, tc.want)
		}
	}
	// An empty directory is taken.
	empty := filepath.Join(t.TempDir(), "empty")
	os.Mkdir(empty, 0o755)
	if code, _, errs := runCLI(t, "", "new", empty); code != exitOK {
		t.Errorf("an empty directory: exit %d\n%s", code, errs)
	}
}
