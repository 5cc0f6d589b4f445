package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// session create/continue without --json print what kitsoki run prints
// for the turn (says and view on stdout, errors on stderr), then the state
// and what it accepts, and exit with the turn's code.
func TestSessionContinueText(t *testing.T) {
	dir := t.TempDir()
	s := []string{"--sessions-dir", dir}
	code, out, errs := runCLI(t, "", append([]string{"session", "create", hello, "--key", "t:1"}, s...)...)
	if code != exitOK || !strings.Contains(out, "Greeted so far: 0.") || !strings.Contains(out, "[lobby] Nobody is being greeted.\n  bye  — Leave.") {
		t.Fatalf("create: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--intent", "bye"}, exitRejected, "", "GUARD_FAILED: no transition matched for intent \"bye\" in state \"lobby\"\nhint: Greet somebody before you leave.\n"},
		{[]string{"--intent", "greet name"}, exitRejected, "", "kitsoki: \"name\": slots are written key=value\n"},
		{[]string{"--raw", "greet name=Ada style=formal"}, exitOK, "Good day, Ada. It is a pleasure to make your acquaintance.\n", ""},
		{[]string{"--intent", "bye"}, exitOK, "Bye! 1 greeting(s) today.\n", ""},
		{[]string{"--intent", "bye"}, exitFailure, "", "finished in state \"farewell\""},
	} {
		code, out, errs := runCLI(t, "", append(append([]string{"session", "continue", "t:1"}, tc.args...), s...)...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) || !strings.Contains(errs, tc.err) {
			t.Errorf("continue %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant stdout starting %q, stderr holding %q", tc.args, code, tc.code, out, errs, tc.out, tc.err)
		}
	}
}

// The errors of the session commands, with their exit codes.
func TestSessionCommandErrors(t *testing.T) {
	dir := t.TempDir()
	s := []string{"--sessions-dir", dir}
	if code, _, errs := runCLI(t, "", append([]string{"session", "create", hello, "--key", "t:1"}, s...)...); code != exitOK {
		t.Fatalf("create: exit %d\n%s", code, errs)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no input", []string{"continue", "t:1"}, exitUsage, "kitsoki session continue: give one input: --intent 'name key=value …', --text 'free text' or --raw LINE\n"},
		{"two inputs", []string{"continue", "t:1", "--raw", "a", "--text", "b"}, exitUsage, "give one input"},
		{"unknown key", []string{"continue", "t:2", "--raw", "bye"}, exitFailure, "kitsoki: session key t:2: no such session in " + dir + "\n"},
		{"bad key", []string{"create", hello, "--key", "T:2"}, exitUsage, `session key "T:2": write transport:thread`},
		{"key taken", []string{"create", hello, "--key", "t:1"}, exitFailure, "the key names a session already (session "},
		{"prune without --older-than", []string{"prune"}, exitUsage, "give --older-than DURATION"},
		{"story that does not load", []string{"create", "nope/app.yaml"}, exitLoad, "cannot read story file"},
		{"cluster flags on a local fork", []string{"fork", "t:1", "--at-turn", "0", "--namespace", "x"}, exitUsage,
			"--namespace applies to a session on a Temporal cluster: give --temporal HOST:PORT too"},
		{"cluster flags on a local prune", []string{"prune", "--older-than", "1h", "--task-queue", "x"}, exitUsage,
			"--task-queue applies to a session on a Temporal cluster: give --temporal HOST:PORT too"},
		{"a fork on no cluster", []string{"fork", "t:1", "--temporal", "127.0.0.1:1", "--connect-timeout", "200ms"}, exitFailure,
			"kitsoki: cannot reach the Temporal server at 127.0.0.1:1"},
		{"a prune on no cluster", []string{"prune", "--older-than", "1h", "--temporal", "127.0.0.1:1", "--connect-timeout", "200ms"}, exitFailure,
			"kitsoki: cannot reach the Temporal server at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, "", append(append([]string{"session"}, tc.args...), s...)...)
			if code != tc.code || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant it to hold %q", code, tc.code, errs, tc.err)
			}
		})
	}
}

// A story edited mid-session: a continue replays the journal against the
// story as it is now. One that decides the same goes on; one that decides
// differently is refused (exit 1, the session untouched), and with --fork
// goes on in a new session from the last turn that matched, as kitsoki
// run --continue does.
func TestSessionContinueAfterTheStoryChanged(t *testing.T) {
	work, dir := t.TempDir(), t.TempDir()
	if err := os.CopyFS(work, os.DirFS("../../stories/hello")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(work, "app.yaml")
	s := []string{"--sessions-dir", dir, "--json"}
	continueJSON := func(args ...string) (int, *driver.Frame, string) {
		t.Helper()
		code, out, errs := runCLI(t, "", append(append([]string{"session", "continue", "bot:1"}, args...), s...)...)
		var f driver.Frame
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("exit %d, no frame: %v\n%s\n%s", code, err, out, errs)
		}
		return code, &f, errs
	}
	if code, _, errs := runCLI(t, "", append([]string{"session", "create", app, "--key", "bot:1"}, s...)...); code != exitOK {
		t.Fatalf("create: exit %d\n%s", code, errs)
	}
	if code, f, errs := continueJSON("--intent", "greet name=Ada"); code != exitOK || f.State != "greeted" {
		t.Fatalf("greet: exit %d state %q\n%s", code, f.State, errs)
	}
	first, _ := os.ReadFile(app)
	edit := func(from, to string) {
		t.Helper()
		b, _ := os.ReadFile(app)
		changed := strings.Replace(string(b), from, to, 1)
		if changed == string(b) {
			t.Fatalf("stories/hello/app.yaml changed shape: %q not found", from)
		}
		if err := os.WriteFile(app, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A new description changes the hash, not a decision.
	edit(`description: "Leave."`, `description: "Leave now."`)
	code, f, errs := continueJSON("--intent", "again")
	if code != exitOK || f.State != "lobby" || !strings.Contains(errs, "replay with the same decisions") {
		t.Fatalf("after a harmless edit: exit %d state %q\n%s", code, f.State, errs)
	}
	id := f.Session.ID
	// Greet now leads elsewhere: turn 1 decides differently.
	if err := os.WriteFile(app, first, 0o644); err != nil {
		t.Fatal(err)
	}
	edit("        - target: greeting\n", "        - target: farewell\n")
	code, f, _ = continueJSON("--intent", "bye")
	if code != exitFailure || !strings.Contains(f.Error, "the story changed and decides differently") || f.Status.Name != "failure" {
		t.Fatalf("after a changing edit: exit %d, frame %+v", code, f)
	}
	code, f, errs = continueJSON("--intent", "greet name=Bob", "--fork")
	if code != exitOK || f.Session.ID == id || f.Session.ForkedFrom != id || !strings.Contains(errs, "forked session "+f.Session.ID) {
		t.Fatalf("--fork: exit %d, frame session %+v\n%s", code, f.Session, errs)
	}
	if f.State != "farewell" {
		t.Errorf("the fork took greet in the story as it is now: state %q, want farewell", f.State)
	}
}

// session list, prune and delete work on the index.
func TestSessionListPruneDelete(t *testing.T) {
	dir := t.TempDir()
	s := []string{"--sessions-dir", dir}
	for _, key := range []string{"t:1", "t:2"} {
		if code, _, errs := runCLI(t, "", append([]string{"session", "create", hello, "--key", key}, s...)...); code != exitOK {
			t.Fatalf("create %s: exit %d\n%s", key, code, errs)
		}
	}
	code, out, _ := runCLI(t, "", append([]string{"session", "list", "--json"}, s...)...)
	var all []struct {
		ID, Key, State string
	}
	if err := json.Unmarshal([]byte(out), &all); err != nil || code != exitOK || len(all) != 2 {
		t.Fatalf("list --json: exit %d, %v\n%s", code, err, out)
	}
	keys := []string{all[0].Key, all[1].Key}
	if d := cmp.Diff([]string{"t:2", "t:1"}, keys); d != "" {
		t.Errorf("keys, newest first (-want +got):\n%s", d)
	}
	if code, out, _ := runCLI(t, "", append([]string{"session", "prune", "--older-than", "1h", "--dry-run"}, s...)...); code != exitOK || out != "" {
		t.Errorf("prune --dry-run of fresh sessions: exit %d, %q", code, out)
	}
	if code, _, errs := runCLI(t, "", append([]string{"session", "delete", "t:1"}, s...)...); code != exitOK || !strings.Contains(errs, "deleted session "+all[1].ID) {
		t.Errorf("delete by key: exit %d\n%s", code, errs)
	}
	code, out, errs := runCLI(t, "", append([]string{"session", "prune", "--older-than", "1ns"}, s...)...)
	if code != exitOK || strings.TrimSpace(out) != all[0].ID || !strings.Contains(errs, "pruned 1 session(s)") {
		t.Errorf("prune: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", append([]string{"session", "list"}, s...)...); code != exitOK || !strings.Contains(errs, "no sessions in") {
		t.Errorf("list after prune: exit %d\n%s", code, errs)
	}
}
