package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// TestScriptedRunsSettleJobs: every scripted front end (stdin, --intents,
// --say) lets the background jobs finish when its input ends and reports
// what they did: the build's completion reaches the terminal state.
func TestScriptedRunsSettleJobs(t *testing.T) {
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"stdin", "build\n", nil},
		{"--intents", "", []string{"--intents", "build"}},
		{"--say", "", []string{"--say", "start a build"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "testdata/bgsay/app.yaml", "--sessions-dir", dir, "--trace", filepath.Join(dir, "t.jsonl")}, tc.args...)
			code, out, errs := runCLI(t, tc.stdin, args...)
			if code != exitOK {
				t.Errorf("exit %d, want 0\nstderr:\n%s", code, errs)
			}
			if d := cmp.Diff("[background job job-1]\nBuild done.\n", out); d != "" {
				t.Errorf("stdout (-want +got):\n%s", d)
			}
		})
	}
}

// TestResumeSayNamesEveryFlag: a resumed --say run skips the texts the
// journal took one by one: one that differs stops the run (exit 2) with
// the scripted resume's message, and the --say that stops a run is named
// by its place among all the --say flags.
func TestResumeSayNamesEveryFlag(t *testing.T) {
	app := filepath.Join(t.TempDir(), "app.yaml")
	src := `app: {id: sayresume}
root: idle
world:
  n: {type: int, default: 0}
intents:
  tick: {}
  check: {}
states:
  idle:
    on:
      tick: [{target: idle, effects: [{increment: {n: 1}}]}]
      check: [{when: "world.n > 10", target: done}]
  done: {terminal: true}
`
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--say", "tick", "--say", "tick"); code != exitIncomplete {
		t.Fatalf("first run: exit %d\n%s", code, errs)
	}
	id := onlySession(t, dir).ID
	for _, tc := range []struct {
		says []string
		code int
		last string // stderr's last line
	}{
		{[]string{"tick", "check"}, exitUsage, "kitsoki: resuming session " + id + `: input 2 is "check", but the session's turn 2 took "tick"; give the same inputs as the run that started it (the journal's are skipped), run them as new turns with --resume-inputs=new, or start a new session`},
		{[]string{" tick ", "tick", "check"}, exitRejected, "kitsoki: stopped at --say 3: check"},
	} {
		args := []string{"run", app, "--sessions-dir", dir, "--continue"}
		for _, s := range tc.says {
			args = append(args, "--say", s)
		}
		code, _, errs := runCLI(t, "", args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != tc.code || lines[len(lines)-1] != tc.last {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit %d, last line:\n%s", tc.says, code, errs, tc.code, tc.last)
		}
	}
}

// TestPromptHelp: :help at a local prompt lists the plugin commands and
// the live agent switches; on
// the cluster it does not, and :quit says the session goes on there.
func TestPromptHelp(t *testing.T) {
	common := `Type an intent and its slots: intent key=value key2="two words"
:intents   what this state accepts     :world   the world as JSON
:state     where the story is          :back    return to the previous room
`
	for _, tc := range []struct {
		name string
		c    *driver.Console
		want string
	}{
		{"local", &driver.Console{Extra: localCommands(&pluginRuntime{}, &switchCommands{})}, common + ":quit      leave\n" +
			":plugins   agent plugins with tools      :enable <alias> / :disable <alias>\n" +
			":reload    re-read the story and go on in it · :reload plugins   re-read only the plugins\n" +
			":provider [profile|none]   switch the default agent   :model [name|n]   :effort [level]"},
		{"cluster", &driver.Console{Extra: clusterCommands{}, QuitHelp: "leave (the session goes on on the cluster)"}, common + ":quit      leave (the session goes on on the cluster)"},
	} {
		if d := cmp.Diff(tc.want, tc.c.Help()); d != "" {
			t.Errorf("%s :help (-want +got):\n%s", tc.name, d)
		}
	}
}
