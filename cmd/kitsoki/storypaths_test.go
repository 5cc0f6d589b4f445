package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command that takes a story takes its directory too (its app.yaml),
// and a path that names nothing is named as typed.
func TestStoryDirectoryEverywhere(t *testing.T) {
	dir := copyHello(t)
	os.MkdirAll(filepath.Join(dir, "intents"), 0o755)
	os.WriteFile(filepath.Join(dir, "intents", "lobby.yaml"), []byte("test_kind: intents\nstate: lobby\nfixtures:\n  - {id: greet, intent: {name: greet, slots: {name: Ada}}, inputs: [greet Ada, greet name=Ada]}\n"), 0o600)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	for _, tc := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"validate", dir}, dir + ": ok (4 states, 4 intents, 2 agent plugins)\n"},
		{[]string{"viz", dir}, "flowchart LR\n"},
		{[]string{"test", "flows", dir}, "Summary: 3/3 flows pass"},
		{[]string{"test", "intents", dir, "--harness", "static"}, "intents: 1 passed, 0 failed"},
		{[]string{"hosts", "host.run", "--story", dir}, "host plugins of " + dir + ": none"},
		{[]string{"eval", "list", dir}, "compose"},
		{[]string{"eval", "list", filepath.Join(dir, "app.yaml")}, "compose"},
		{[]string{"run", dir, "--trace", tr, "--intents", "greet name=Ada,bye"}, "Bye! 1 greeting(s) today."},
		{[]string{"trace", "to-cassette", tr, "--story", dir, "-o", filepath.Join(t.TempDir(), "c.yaml")}, ""},
	} {
		code, out, errs := runCLI(t, "", tc.args...)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %q in\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"validate", "../../stories/nope"}, exitLoad, "../../stories/nope: cannot read story file: no such file or directory"},
		{[]string{"run", "../../stories/nope.yaml"}, exitLoad, "../../stories/nope.yaml: cannot read story file: no such file or directory"},
		{[]string{"viz", empty}, exitLoad, filepath.Join(empty, "app.yaml") + ": " + empty + " is a directory without an app.yaml: name the story's root file"},
		{[]string{"test", "flows", "../../stories/nope"}, exitFlowsSetup, "kitsoki test flows: ../../stories/nope: cannot read story file: no such file or directory"},
		{[]string{"test", "flows", empty}, exitFlowsSetup, "kitsoki test flows: " + filepath.Join(empty, "app.yaml") + ": " + empty + " is a directory without an app.yaml"},
		{[]string{"eval", "list", "../../stories/nope"}, exitFailure, "kitsoki eval list: ../../stories/nope: no such story directory or eval dataset"},
		{[]string{"hosts", "--story", "../../stories/nope"}, exitLoad, "../../stories/nope: cannot read story file"},
	} {
		code, _, errs := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d (want %d), want %q in\n%s", tc.args, code, tc.code, tc.want, errs)
		}
	}
}

// kitsoki hosts NAME lists one handler, or those under a prefix; a name
// nothing matches is an error with a suggestion.
func TestHostsFilter(t *testing.T) {
	code, out, errs := runCLI(t, "", "hosts", "host.run")
	if code != exitOK || !strings.HasPrefix(out, "host.run  Run a program") || strings.Contains(out, "host.git") || strings.Contains(out, "not built") {
		t.Errorf("hosts host.run: exit %d\n%s%s", code, out, errs)
	}
	_, all, _ := runCLI(t, "", "hosts")
	code, out, _ = runCLI(t, "", "hosts", "host.git")
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			names = append(names, strings.Fields(l)[0])
		}
	}
	if code != exitOK || len(names) < 2 || len(out) >= len(all) {
		t.Fatalf("hosts host.git: exit %d, handlers %v", code, names)
	}
	for _, n := range names {
		if n != "host.git" && !strings.HasPrefix(n, "host.git.") && !strings.HasPrefix(n, "host.git_") {
			t.Errorf("hosts host.git lists %s", n)
		}
		if strings.HasPrefix(n, "host.git_") {
			t.Errorf("host.git is a dotted prefix: %s is not under it", n)
		}
	}
	if code, out, _ := runCLI(t, "", "hosts", "host.slidey.render"); code != exitOK || !strings.Contains(out, "host.slidey, host.slidey.*  needs slidey") {
		t.Errorf("a handler kitsoki does not build: exit %d\n%s", code, out)
	}
	code, out, errs = runCLI(t, "", "hosts", "host.rnu")
	if want := "kitsoki hosts: no handler is named host.rnu or host.rnu.* (did you mean host.run?); kitsoki hosts lists them all\n"; code != exitFailure || out != "" || errs != want {
		t.Errorf("a typo: exit %d\n%s%s\nwant %q", code, out, errs, want)
	}
	code, out, errs = runCLI(t, "", "hosts", "host.tickets", "--story", "../../stories/host-plugin-py")
	if code != exitOK || strings.Contains(out, "host.run ") || !strings.Contains(out, "host.tickets, host.tickets.*") {
		t.Errorf("a story's host plugin: exit %d\n%s%s", code, out, errs)
	}
}

// eval list of a story without datasets says so.
func TestEvalListNoDatasets(t *testing.T) {
	dir := t.TempDir()
	if code, out, _ := runCLI(t, "", "eval", "list", dir); code != exitOK || out != dir+": no eval datasets (evals/*.yaml; see docs/evals.md)\n" {
		t.Errorf("no datasets: exit %d, %q", code, out)
	}
}
