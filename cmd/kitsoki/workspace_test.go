package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const wsHint = " (widen the workspace with --workspace DIR)"

const cliStory = "app: {id: w}\nroot: s\nintents: {go: {}}\nstates:\n  s:\n    on: {go: [{target: done}]}\n  done: {terminal: true}\n"

// `kitsoki validate` and `kitsoki run` refuse a story naming a file outside
// its workspace (exit 2, the file never quoted), and load it once
// --workspace holds the file.
func TestValidateAndRunWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"proj/a/app.yaml":       cliStory + "include: [../../outside/secret.yaml]\n",
		"proj/b/app.yaml":       cliStory + "include: [../shared/more.yaml]\n",
		"proj/shared/more.yaml": "states:\n  more: {}\n",
		"outside/secret.yaml":   "TOPSECRET: root:x:0:0\n",
	})
	a, b := filepath.Join(tmp, "proj", "a", "app.yaml"), filepath.Join(tmp, "proj", "b", "app.yaml")
	code, _, errs := runCLI(t, "", "validate", a)
	want := `app.yaml:8:11: include[0]: "../../outside/secret.yaml" is outside the workspace ` + filepath.Join(tmp, "proj", "a") + wsHint + "\n"
	if code != exitLoad || errs != want {
		t.Errorf("validate a: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errs, exitLoad, want)
	}
	code, _, errs = runCLI(t, "", "run", a, "--trace", filepath.Join(tmp, "t1.jsonl"), "--intents", "go")
	if code != exitLoad || errs != want {
		t.Errorf("run a: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errs, exitLoad, want)
	}
	code, _, errs = runCLI(t, "", "validate", b)
	want = `app.yaml:8:11: include[0]: "../shared/more.yaml" is outside the workspace ` + filepath.Join(tmp, "proj", "b") + wsHint + "\n"
	if code != exitLoad || errs != want {
		t.Errorf("validate b: exit %d, stderr:\n%s\nwant:\n%s", code, errs, want)
	}
	if code, out, errs := runCLI(t, "", "validate", "--workspace", filepath.Join(tmp, "proj"), b); code != exitOK || !strings.Contains(out, ": ok (") {
		t.Errorf("validate --workspace proj b: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "run", b, "--workspace", filepath.Join(tmp, "proj"), "--trace", filepath.Join(tmp, "t2.jsonl"), "--intents", "go"); code != exitOK {
		t.Errorf("run --workspace proj b: exit %d: %s", code, errs)
	}
	// Even widened, validating a story that includes a non-story file
	// never reaches the content of a file outside the workspace.
	if _, _, errs := runCLI(t, "", "validate", "--workspace", filepath.Join(tmp, "proj"), a); strings.Contains(errs, "TOPSECRET") {
		t.Errorf("validate quotes a file outside the workspace:\n%s", errs)
	}
}

// `kitsoki test flows` and `kitsoki eval run` take --workspace too.
func TestFlowsAndEvalWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"proj/a/app.yaml":        cliStory,
		"proj/a/flows/f.yaml":    "test_kind: flow\napp: ../../b/app.yaml\nturns:\n  - intent: {name: go}\n    expect_state: done\n",
		"proj/b/app.yaml":        cliStory,
		"proj/b/evals/pick.yaml": "kind: agent_eval\napp: ../../c/app.yaml\ncall: pick\ncomparator: exact\nexamples:\n  - {name: e1, expect: {x: 1}}\n",
		"proj/c/app.yaml":        "app: {id: c}\nroot: s\nstates:\n  s:\n    on_enter:\n      - invoke: host.agent.decide\n        id: pick\n        with: {prompt: hi}\n",
	})
	a := filepath.Join(tmp, "proj", "a", "app.yaml")
	fixture := filepath.Join(tmp, "proj", "a", "flows", "f.yaml")
	code, _, errs := runCLI(t, "", "test", "flows", a)
	want := `kitsoki test flows: ` + fixture + `:2:6: app: "../../b/app.yaml" is outside the workspace ` + filepath.Join(tmp, "proj", "a") + wsHint + "\n"
	if code != exitFlowsSetup || errs != want {
		t.Errorf("test flows: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errs, exitFlowsSetup, want)
	}
	if code, out, errs := runCLI(t, "", "test", "flows", "--workspace", filepath.Join(tmp, "proj"), a); code != exitOK {
		t.Errorf("test flows --workspace: exit %d: %s%s", code, out, errs)
	}

	ds := filepath.Join(tmp, "proj", "b", "evals", "pick.yaml")
	code, out, _ := runCLI(t, "", "eval", "run", ds)
	want = "ERROR: " + ds + `:2:6: app: "../../c/app.yaml" names a story whose workspace ` + filepath.Join(tmp, "proj", "c") +
		" does not hold this dataset" + wsHint + "\n"
	if code != exitFailure || out != want {
		t.Errorf("eval run: exit %d, stdout:\n%s\nwant exit %d, stdout:\n%s", code, out, exitFailure, want)
	}
	if code, out, errs := runCLI(t, "", "eval", "run", "--workspace", filepath.Join(tmp, "proj"), ds); code != exitOK || !strings.HasPrefix(out, "OK offline eval contract: pick") {
		t.Errorf("eval run --workspace: exit %d: %s%s", code, out, errs)
	}
}

// `kitsoki mcp serve` confines the stories its tools load to --root, or to
// --workspace when given.
func TestMCPServeWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"srv/a/app.yaml":  cliStory + "include: [../../extra/more.yaml]\n",
		"extra/more.yaml": "states:\n  more: {}\n",
		"outside/x.yaml":  "",
	})
	srv := filepath.Join(tmp, "srv")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"validate_story_kitsoki","arguments":{"path":"a"}}}`,
	}, "\n") + "\n"
	validate := func(args ...string) map[string]any {
		t.Helper()
		code, out, errs := runCLI(t, in, append([]string{"mcp", "serve", "--stdio", "--root", srv}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("not JSON-RPC: %q", line)
			}
			if m["id"] == 2.0 {
				sc, _ := m["result"].(map[string]any)["structuredContent"].(map[string]any)
				return sc
			}
		}
		t.Fatalf("no reply to the tool call:\n%s", out)
		return nil
	}
	sc := validate()
	want := `app.yaml:8:11: include[0]: "../../extra/more.yaml" is outside the workspace ` + srv + wsHint
	if errs, _ := sc["errors"].([]any); sc["ok"] != false || len(errs) != 1 || errs[0] != want {
		t.Errorf("validate under --root: %v, want the error %q", sc, want)
	}
	if sc := validate("--workspace", tmp); sc["ok"] != true {
		t.Errorf("validate with --workspace: %v, want ok", sc)
	}
}

// A fixture that cannot run is reported with the others, which still run;
// the run then exits 2 naming the first setup error.
func TestFlowsSetupErrorReportsTheOthers(t *testing.T) {
	good := "test_kind: flow\napp: ../app.yaml\nturns:\n  - intent: {name: go}\n    expect_state: done\n"
	tmp := testkit.Tree(t, map[string]string{
		"proj/a/app.yaml":     cliStory,
		"proj/a/flows/a.yaml": good,
		"proj/a/flows/b.yaml": "test_kind: flow\napp: ../app.yaml\ninitial_state: nowhere\n",
		"proj/a/flows/c.yaml": good,
		"proj/a/flows/d.yaml": "test_kind: flow\napp: ../app.yaml\ninitial_state: gone\n",
	})
	code, out, errs := runCLI(t, "", "test", "flows", filepath.Join(tmp, "proj", "a", "app.yaml"))
	first := `b.yaml: initial_state "nowhere" is not a state of w (states: done, s)`
	second := `d.yaml: initial_state "gone" is not a state of w (states: done, s)`
	wantOut := "PASS  a.yaml\nFAIL  b.yaml\n  ✗ setup: " + first + "\nPASS  c.yaml\nFAIL  d.yaml\n  ✗ setup: " + second + "\n\nSummary: 2/4 flows pass\nFAIL\n"
	wantErr := "kitsoki test flows: " + first + " (and 1 more fixture that could not run: see the report)\n"
	if code != exitFlowsSetup || out != wantOut || errs != wantErr {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s", code, out, errs, exitFlowsSetup, wantOut, wantErr)
	}
}
