package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
)

// typedWorld is a story with one world key of each declared type; its root
// state is terminal, so a run that loads ends at once with exit 0.
const typedWorld = "testdata/typedworld/app.yaml"

// --world values are checked against the declared types before the run
// starts: a value that does not fit is a usage error (exit 2) naming the
// flag, the key, the declared type and the value.
func TestWorldFlagTypes(t *testing.T) {
	tests := []struct {
		flag string
		want string // stderr line; "" = accepted
	}{
		{"n=3", ""},
		{"n=three", `--world n=three: world key "n" is declared int; "three" is not an int`},
		{"n=2.5", `--world n=2.5: world key "n" is declared int; "2.5" is not an int`},
		{"f=2.5", ""},
		{"f=7", ""},
		{"f=lots", `--world f=lots: world key "f" is declared float; "lots" is not a number`},
		{"b=true", ""},
		{"b=maybe", `--world b=maybe: world key "b" is declared bool; "maybe" is not true or false`},
		{"s=42", ""}, // a string key takes the text as it is
		{"e=high", ""},
		{"e=huge", `--world e=huge: world key "e" is declared enum; "huge" is not one of low, high`},
		{`o={"k": 1}`, ""},
		{"o=[1]", `--world o=[1]: world key "o" is declared object; "[1]" is not a JSON object`},
		{"o=x", `--world o=x: world key "o" is declared object; "x" is not a JSON object`},
		{"l=[1, 2]", ""},
		{`l={"k": 1}`, `--world l={"k": 1}: world key "l" is declared list; "{\"k\": 1}" is not a JSON list`},
		{"any=whatever", ""}, // declared without a type
		{"colour=red", `--world colour=red: "colour" is not declared in world: (declared: any, b, e, f, l, last_error, n, o, s, session_cost_usd, session_id, turn_cost_usd, write_mode_scope)`},
		{"n", `--world "n": write key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			tr := filepath.Join(t.TempDir(), "t.jsonl")
			code, _, errs := runCLI(t, "", "run", typedWorld, "--trace", tr, "--world", tt.flag)
			if tt.want == "" {
				if code != exitOK {
					t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
				}
				return
			}
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if got := strings.TrimSpace(errs); got != tt.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// Accepted values reach the world typed: the seed writes one world.update
// per flag with the converted value.
func TestWorldFlagValuesAreTyped(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, _, errs := runCLI(t, "", "run", typedWorld, "--trace", tr,
		"--world", "n=3", "--world", "f=7", "--world", "b=false", "--world", "l=[1]")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	evs, err := trace.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ev := range evs {
		if set, ok := ev.Payload["set"].(map[string]any); ok && ev.Kind == "world.update" && ev.Turn == 0 {
			for k, v := range set {
				got[k] = worldJSON(t, v)
			}
		}
	}
	want := map[string]string{"n": "3", "f": "7", "b": "false", "l": "[1]"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("world.update %s = %s, want %s (all: %v)", k, got[k], v, got)
		}
	}
}

func worldJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A near miss of a declared slot is a rejection (exit 3) in a scripted run,
// and the REPL shows it and keeps going; another undeclared slot is taken
// (the session logs a warning).
func TestUnknownSlotShown(t *testing.T) {
	const want = `UNKNOWN_SLOT: unknown slot "stlye" for intent greet; did you mean "style"?`
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=Ada stlye=formal")
	if code != exitRejected {
		t.Errorf("scripted: exit %d, want %d", code, exitRejected)
	}
	if !strings.Contains(errs, want+"\n") {
		t.Errorf("scripted stderr lacks %q:\n%s", want, errs)
	}
	code, out, errs := runInteractive(t, "greet name=Ada stlye=formal\ngreet name=Ada colour=red\nbye\n")
	if code != exitOK {
		t.Fatalf("interactive: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, want+"\n") {
		t.Errorf("interactive stderr lacks %q:\n%s", want, errs)
	}
	if strings.Contains(errs, `"colour"`) || strings.Contains(errs, "INTENT_NOT_ALLOWED") {
		t.Errorf("the undeclared colour slot was refused, or bye did not follow a greeting:\n%s", errs)
	}
}

// A guard that reads an undeclared world key is a warning at validate, and
// an error (exit 2) with --strict.
func TestValidateGuardReadsUndeclaredWorldKey(t *testing.T) {
	const app = "testdata/guardreads/app.yaml"
	const diag = `app.yaml:12:24: states.start.on.go[0].when: the guard reads world key "verdikt", which is not declared in world: (did you mean "verdict"?)`
	code, out, errs := runCLI(t, "", "validate", app)
	if code != exitOK || errs != "warning: "+diag+"\n" || !strings.Contains(out, ": ok (") {
		t.Errorf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "", "validate", "--strict", app)
	if want := diag + "\n1 warning, which is an error with --strict\n"; code != 2 || errs != want || out != "" {
		t.Errorf("validate --strict: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2, stderr:\n%s", code, out, errs, want)
	}
	if code, _, errs := runCLI(t, "", "validate", "--strict", hello); code != exitOK {
		t.Errorf("validate --strict of the bundled story: exit %d\n%s", code, errs)
	}
}

// The run-starting MCP tool checks its world against the declared types
// before it makes a trace.
func TestStartRunChecksWorldTypes(t *testing.T) {
	app, err := filepath.Abs(hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	start := startRun(&globals{}, newRootCmd(), nil)
	_, err = start(t.Context(), mcpserve.StartRunRequest{Story: app, World: map[string]any{"greetings": "three"}})
	if want := `world key "greetings" is declared int; the initial value "three" is not an int`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if _, err := os.Stat(".kitsoki"); !os.IsNotExist(err) {
		t.Errorf("a refused run left files: %v", err)
	}
	res, err := start(t.Context(), mcpserve.StartRunRequest{Story: app, World: map[string]any{"greetings": 2.0}, Intents: []string{"bye"}})
	if err != nil || !res.Terminal {
		t.Errorf("a JSON number for an int key: %+v, %v", res, err)
	}
}
