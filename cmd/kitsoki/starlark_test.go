package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const starlarkDir = "testdata/starlark"

// runStarlark runs the starlark test story with its directory as the
// workspace.
func runStarlark(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	base := []string{"run", filepath.Join(starlarkDir, "app.yaml"), "--workspace", starlarkDir,
		"--trace", filepath.Join(t.TempDir(), "t.jsonl")}
	return runCLI(t, "", append(base, args...)...)
}

// Real runs of host.starlark.run: each intent enters a state whose
// on_enter runs a script; failures are domain errors the on_error handles.
func TestRunStarlark(t *testing.T) {
	oslo := filepath.Join(starlarkDir, "cassettes", "oslo.http.yaml")
	tests := []struct {
		name   string
		args   []string
		stdout string // the final view
		stderr string // the handled-error line, "" for none
	}{
		{"typed inputs, HTTP replayed from a cassette, bound into the world",
			[]string{"--intents", "forecast", "--http-cassette", oslo},
			"Forecast: Oslo, Norway, 3 days, up to 14.25 degC (max 14.25)", ""},
		{"a templated input changes the request (a miss is a domain error)",
			[]string{"--intents", "forecast", "--http-cassette", oslo, "--world", "days=2"},
			"Failed: host.starlark.run: scripts/forecast.star: scripts/forecast.star:7:21: ctx.http.get: GET https://weather.example.test/forecast?city=Oslo&days=2: " +
				"no exchange in the HTTP cassette oslo.http.yaml matches (record mode none; available: GET https://weather.example.test/forecast?city=Oslo&days=3)",
			"host error: host.starlark.run (call forecast): scripts/forecast.star: scripts/forecast.star:7:21: ctx.http.get: GET"},
		{"no cassette: no network",
			[]string{"--intents", "forecast"},
			"Failed: host.starlark.run: scripts/forecast.star: scripts/forecast.star:7:21: ctx.http.get: GET https://weather.example.test/forecast?city=Oslo&days=3: " +
				"HTTP is off: a script reaches the network only through an HTTP cassette",
			"— on_error → failed"},
		{"a read outside the workspace is refused",
			[]string{"--intents", "peek"},
			`Failed: host.starlark.run: scripts/peek.star: scripts/peek.star:2:32: ctx.fs.read: "../../main.go" is outside the workspace`, ""},
		{"an absolute path is refused",
			[]string{"--intents", "peek", "--world", "path=/etc/hostname"},
			`Failed: host.starlark.run: scripts/peek.star: scripts/peek.star:2:32: ctx.fs.read("/etc/hostname"): give a path relative to the workspace root`, ""},
		{"a read inside the workspace works",
			[]string{"--intents", "peek", "--world", "path=data/units.txt"},
			"Read: degC", ""},
		{"the step limit",
			[]string{"--intents", "spin"},
			"Failed: host.starlark.run: scripts/spin.star: exceeded the step limit of 10000000 steps (an endless or very long loop?)",
			"host error: host.starlark.run: scripts/spin.star: exceeded the step limit of 10000000 steps (an endless or very long loop?) — on_error → failed"},
		{"an input of the wrong type at call",
			[]string{"--intents", "wrongin"},
			`Failed: host.starlark.run: scripts/forecast.star: input "days" must be int, got string "Oslo"`, ""},
		{"an output of the wrong type at call",
			[]string{"--intents", "wrongout"},
			`Failed: host.starlark.run: scripts/wrong_out.star: output "summary" must be string, got int 42`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runStarlark(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if tt.stderr != "" && !strings.Contains(errs, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errs)
			}
		})
	}
}

// Without on_error a failing script stops the run with exit 4.
func TestRunStarlarkUnhandledExit(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	writeFile(t, app, "app: {id: s}\nhosts: [host.starlark.run]\nroot: a\nstates:\n  a:\n    on_enter:\n"+
		"      - invoke: host.starlark.run\n        with: {script: s.star}\n    terminal: true\n")
	writeFile(t, filepath.Join(dir, "s.star"), "def main(ctx):\n    fail(\"no luck\")\n")
	writeFile(t, filepath.Join(dir, "s.star.yaml"), "outputs: {}\n")
	code, _, errs := runCLI(t, "", "run", app, "--workspace", dir, "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "")
	if code != exitAgent {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitAgent, errs)
	}
	if want := "error: host.starlark.run: host.starlark.run: s.star: s.star:2:9: fail: no luck"; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The sidecar contract is checked at load: exit 2 with file:line:col.
func TestValidateStarlarkLoadErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"literal_type.yaml", `literal_type.yaml:10:38: states.a.on_enter[0].with.inputs.days: input "days" is declared int in ../scripts/forecast.star.yaml ` +
			`but this literal is string; write a value of type int, or template one: "{{ world.x }}"`},
		{"bare_expr.yaml", `bare_expr.yaml:12:26: states.a.on_enter[0].with.inputs.city: "world.city" is an expression written without {{ }}: ` +
			`the script would get this text, not its value; write "{{ world.city }}"`},
		{"no_sidecar.yaml", `no_sidecar.yaml:8:24: states.a.on_enter[0].with.script: script "nosidecar.star" has no sidecar nosidecar.star.yaml beside it: ` +
			`declare its inputs: and outputs: there`},
		{"bad_type.yaml", `bad_type.yaml:8:24: states.a.on_enter[0].with.script: sidecar: badtype.star.yaml:2:13: inputs.n.type: unknown type "integer" ` +
			`(want one of string, int, number, bool, object, list, any)`},
		{"bad_type.yaml", `bad_type.yaml:8:38: states.a.on_enter[0].with.timeout: host.starlark.run takes with.script and with.inputs; "timeout" is not one of its keys`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			for _, cmd := range []string{"validate", "run"} {
				code, _, errs := runCLI(t, "", cmd, filepath.Join(starlarkDir, "badload", tt.file), "--workspace", starlarkDir)
				if code != exitLoad {
					t.Fatalf("%s: exit %d, want %d\nstderr:\n%s", cmd, code, exitLoad, errs)
				}
				if !strings.Contains(errs, tt.want) {
					t.Errorf("%s: stderr lacks\n%s\ngot:\n%s", cmd, tt.want, errs)
				}
			}
		})
	}
}

// kitsoki run --record --http-cassette fetches from the live side (a
// loopback server here) and writes the cassette; a later run replays it
// with the server gone.
func TestRunStarlarkRecordsHTTPCassette(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/forecast" || r.URL.Query().Get("city") != "Bergen" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=s3cr3t")
		_, _ = w.Write([]byte(`{"place":"Bergen, Norway","max":[7.5,8,6]}`))
	}))
	dir := t.TempDir()
	cas := filepath.Join(dir, "bergen.http.yaml")
	world := []string{"--world", "city=Bergen", "--world", "base=" + srv.URL}
	code, out, errs := runStarlark(t, append(world, "--intents", "forecast", "--http-cassette", cas, "--record", filepath.Join(dir, "run.cassette.yaml"))...)
	const want = "Forecast: Bergen, Norway, 3 days, up to 8 degC (max 8)"
	if code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("recording run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	srv.Close()
	b, err := os.ReadFile(cas)
	if err != nil {
		t.Fatalf("the cassette was not written: %v", err)
	}
	for _, w := range []string{"kind: http_cassette", "url: " + srv.URL + "/forecast?city=Bergen&days=3", "Set-Cookie: REDACTED", "status: 200"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("cassette lacks %q:\n%s", w, b)
		}
	}
	if strings.Contains(string(b), "s3cr3t") {
		t.Errorf("cassette keeps the cookie:\n%s", b)
	}
	trPath := filepath.Join(t.TempDir(), "replay.jsonl")
	code, out, errs = runCLI(t, "", append([]string{"run", filepath.Join(starlarkDir, "app.yaml"), "--workspace", starlarkDir,
		"--trace", trPath, "--intents", "forecast", "--http-cassette", cas}, world...)...)
	if code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// The host recorder kept the whole call: --cassette replays the
	// handler's result without any HTTP cassette.
	code, out, errs = runCLI(t, "", append([]string{"run", filepath.Join(starlarkDir, "app.yaml"), "--workspace", starlarkDir,
		"--trace", filepath.Join(t.TempDir(), "c.jsonl"), "--intents", "forecast", "--cassette", filepath.Join(dir, "run.cassette.yaml")}, world...)...)
	if code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("--cassette replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	evs, err := trace.ReadFile(trPath)
	if err != nil {
		t.Fatal(err)
	}
	var exchanges string
	for _, ev := range evs {
		if ev.Kind == "harness.returned" {
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			exchanges = string(b)
		}
	}
	if !strings.Contains(exchanges, `"__http_exchanges":[{"method":"GET","status":200,"url":"`+srv.URL+`/forecast?city=Bergen\u0026days=3"}]`) &&
		!strings.Contains(exchanges, `"__http_exchanges":[{"method":"GET","status":200,"url":"`+srv.URL+`/forecast?city=Bergen&days=3"}]`) {
		t.Errorf("harness.returned lacks the exchange summary: %s", exchanges)
	}
}

// The flow fixtures of the test story replay their HTTP through
// starlark_http_cassette: with the real handler.
func TestStarlarkFlows(t *testing.T) {
	code, out, errs := runCLI(t, "", "test", "flows", filepath.Join(starlarkDir, "app.yaml"), "--workspace", starlarkDir)
	if code != exitOK || !strings.Contains(out, "Summary: 2/2 flows pass") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// A cassette that cannot be used stops the run before it starts (exit 1).
func TestRunHTTPCassetteErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.http.yaml")
	code, _, errs := runStarlark(t, "--intents", "forecast", "--http-cassette", missing)
	if want := "--http-cassette: http cassette: open " + missing + ": no such file or directory"; code != exitFailure || !strings.Contains(errs, want) {
		t.Errorf("missing cassette: exit %d, stderr %q, want 1 and %q", code, errs, want)
	}
	t.Setenv("KITSOKI_CASSETTE_STRICT", "1")
	code, _, errs = runStarlark(t, "--intents", "forecast", "--http-cassette", missing, "--record", filepath.Join(t.TempDir(), "r.yaml"))
	if want := "--http-cassette " + missing + `: KITSOKI_CASSETTE_STRICT=1 but the HTTP cassette's record mode is "new_episodes"`; code != exitFailure || !strings.Contains(errs, want) {
		t.Errorf("strict: exit %d, stderr %q, want 1 and %q", code, errs, want)
	}
	if code, out, errs := runStarlark(t, "--intents", "forecast", "--http-cassette", filepath.Join(starlarkDir, "cassettes", "oslo.http.yaml")); code != exitOK {
		t.Errorf("strict replay: exit %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("KITSOKI_CASSETTE_STRICT", "")
	t.Setenv(httpRecordEnv, "sometimes")
	code, _, errs = runStarlark(t, "--intents", "forecast", "--http-cassette", filepath.Join(starlarkDir, "cassettes", "oslo.http.yaml"))
	if want := `--http-cassette: http cassette testdata/starlark/cassettes/oslo.http.yaml: record mode "sometimes" is not one of none, once, new_episodes, all ` +
		`(KITSOKI_HTTP_CASSETTE_RECORD, when set, is one of none, once, new_episodes, all)`; code != exitFailure || !strings.Contains(errs, want) {
		t.Errorf("bad mode: exit %d, stderr %q, want 1 and %q", code, errs, want)
	}
}
