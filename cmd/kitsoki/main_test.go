package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// runCLI runs the CLI in-process with stdin from a string.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb testkit.SyncBuffer // safe for concurrent writes, as the process's own stdout and stderr are
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const hello = "../../stories/hello/app.yaml"

func TestRunHelloScripted(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=Ada style=formal,bye")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"Good day, Ada.", "Ada was greeted (formal).", "Bye! 1 greeting(s) today."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	evs, err := trace.ReadFile(tr)
	if err != nil {
		t.Fatalf("trace does not read back: %v", err)
	}
	var kinds []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Kind, "agent.call.") {
			kinds = append(kinds, ev.Kind)
		}
	}
	if strings.Join(kinds, " ") != "agent.call.start agent.call.complete" {
		t.Errorf("agent events = %v", kinds)
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("app: {id: x}\nroot: nowhere\nstates: {a: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn := filepath.Join(dir, "dyn.yaml")
	dynStory := "app: {id: dyn}\nintents: {jump: {slots: {to: {type: string}}}}\nroot: a\n" +
		"states:\n  a:\n    on:\n      jump:\n        - target: \"{{ slots.to }}\"\n  b: {terminal: true}\n"
	if err := os.WriteFile(dyn, []byte(dynStory), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"guard failure", "", []string{"run", hello, "--intents", "bye"}, exitRejected,
			`GUARD_FAILED: no transition matched for intent "bye" in state "lobby"`},
		{"guard hint shown", "", []string{"run", hello, "--intents", "bye"}, exitRejected, "hint: Greet somebody before you leave."},
		{"unknown intent", "", []string{"run", hello, "--intents", "gret name=x"}, exitRejected, `did you mean "greet"?`},
		{"missing slot", "", []string{"run", hello, "--intents", "greet"}, exitRejected, "MISSING_SLOTS"},
		{"input ends early", "greet name=Bo\n", []string{"run", hello}, exitIncomplete, `input ended in state "greeted"`},
		{"stdin script with comments", "# a comment\n\ngreet name=Bo\nbye\n", []string{"run", hello}, exitOK, ""},
		{"stdin script names the line that stopped it", "# a comment\ngreet name=Bo\nbogus x=1\nbye\n", []string{"run", hello}, exitRejected,
			"stopped at input line 3: bogus x=1"},
		{"terminal command in a script", "greet name=Bo\n:intents\n", []string{"run", hello}, exitFailure,
			`input line 2: ":intents" is a terminal command`},
		{"load error", "", []string{"run", bad}, exitLoad, "root"},
		{"templated target taken", "", []string{"run", dyn, "--intents", "jump to=b"}, exitOK, ""},
		{"templated target names no state", "", []string{"run", dyn, "--intents", "jump to=c"}, exitMachine,
			`error: transition error in state a, arm 0 of on.jump (dyn.yaml:8:19): target "{{ slots.to }}" rendered "c", which is not a state`},
		{"validate load error", "", []string{"validate", bad}, exitLoad, "bad.yaml:2:7"},
		{"unknown world key", "", []string{"run", hello, "--world", "nmae=x"}, exitUsage, `"nmae" is not declared in world:`},
		{"bad root", "", []string{"run", hello, "--root", "nowhere"}, exitFailure, `root state "nowhere" does not exist`},
		{"unknown mode", "", []string{"run", hello, "--mode", "batch"}, exitUsage, `--mode: unknown execution mode "batch": use one_shot or staged`},
		{"staged mode", "greet name=Bo\nbye\n", []string{"run", hello, "--mode", "staged"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--trace", filepath.Join(t.TempDir(), "t.jsonl"))
			if tt.args[0] == "validate" {
				args = tt.args
			}
			code, out, errs := runCLI(t, tt.stdin, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if !strings.Contains(errs, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errs)
			}
		})
	}
}

func TestRunWorldAndRoot(t *testing.T) {
	code, out, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--world", "greetings=3", "--intents", "bye")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Bye! 3 greeting(s) today.") {
		t.Errorf("--world greetings=3 not typed as int or not applied:\n%s", out)
	}
	code, out, errs = runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--root", "greeted", "--intents", "bye")
	if code != exitOK {
		t.Fatalf("--root: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestValidateHello(t *testing.T) {
	code, out, errs := runCLI(t, "", "validate", hello)
	if code != exitOK || !strings.Contains(out, "ok (4 states") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestInteractiveLoop(t *testing.T) {
	// The terminal loop itself, fed from a reader: it describes the state,
	// keeps going after a rejection, and answers its colon commands.
	code, out, errs := runInteractive(t, "bye\n:world\ngreet name=Ada\n:intents\nbye\n")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"[lobby] Nobody is being greeted.",
		"  greet name=<string> [style=casual|formal]  — Greet: Ask the greeter to greet someone.",
		`"greetings": 0`,
		"Hey Ada, good to see you!",
		"[greeted] Greeting delivered.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "GUARD_FAILED") {
		t.Errorf("the rejection was not shown:\n%s", errs)
	}
	if strings.Contains(out, "greeted  —") {
		t.Errorf("a hidden intent was listed:\n%s", out)
	}
}

func TestRunUnhandledFailureWinsOverTerminal(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	files := map[string]string{
		app: `app: {id: failing}
agent_plugins: {agent.demo: {plugin: builtin.inprocess}}
intents: {go: {}}
root: s
states:
  s:
    on:
      go:
        - target: done
          effects:
            - invoke: host.agent.decide
              agent: agent.demo
              with: {prompt: "hi", schema: strict.json, args: {name: x}}
  done: {terminal: true}
`,
		filepath.Join(dir, "strict.json"): `{"type": "object", "required": ["nope"]}`,
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errs := runCLI(t, "", "run", app, "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "go")
	if code != exitAgent || !strings.Contains(errs, "agent: schema_invalid: /: required: missing property 'nope'") {
		t.Errorf("exit %d, want %d (the decide failed with no on_error even though the run ended):\n%s", code, exitAgent, errs)
	}
}

func TestValidateReportsEveryErrorAndWarnings(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	body := "app: {id: x}\nroot: a\nintents: {go: {}}\nstates:\n  a:\n    on:\n      go: [{target: bb}, {target: a}]\n  b: {descripton: \"x\"}\n"
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "validate", bad)
	if code != exitLoad {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`bad.yaml:7:21: states.a.on.go[0].target: unknown state "bb" (did you mean "b"?)`,
		`bad.yaml:8:7: states.b.descripton: unknown key "descripton" (did you mean "description"?)`,
		"2 errors",
		"warning: bad.yaml:7:",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
