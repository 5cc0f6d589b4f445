package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// goHostPluginDir copies testdata/hostplugins into a fresh directory and
// builds the Go example host plugin (examples/plugins/tickets-go) into its
// bin/tickets. Run stories there with --workspace dir.
func goHostPluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"app.yaml", "bad.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata/hostplugins", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "tickets"), "github.com/kitsoki/kitsoki/examples/plugins/tickets-go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tickets-go plugin: %v\n%s", err, out)
	}
	return dir
}

// worldSets collects the world.update "set" values of a trace, last wins.
func worldSets(t *testing.T, path string) map[string]any {
	t.Helper()
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, ev := range evs {
		if ev.Kind != trace.KindWorldUpdate {
			continue
		}
		if set, ok := ev.Payload["set"].(map[string]any); ok {
			for k, v := range set {
				out[k] = v
			}
		}
	}
	return out
}

// A real run of a story whose host.tickets is a Go host plugin: the
// plugin's data is bound into the world, and the token it was given
// (env: ${VAR}) is masked in the trace and in the --record cassette, which
// then replays the run without the plugin.
func TestRunGoHostPlugin(t *testing.T) {
	const token = "tickets-token-5f2c9a"
	t.Setenv("KITSOKI_TEST_TICKETS_TOKEN", token)
	dir := goHostPluginDir(t)
	app, tr, cas := filepath.Join(dir, "app.yaml"), filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "c.yaml")
	code, out, errs := runCLI(t, "", "run", app, "--workspace", dir, "--trace", tr, "--record", cas, "--intents", "file title=printer,whoami,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ticket T-1: printer (open)", "closed as tickets-bot"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	w := worldSets(t, tr)
	wantTicket := map[string]any{"id": "T-1", "title": "printer", "priority": "high", "status": "open", "opened_in": "desk"}
	if d := cmp.Diff(wantTicket, w["ticket"]); d != "" || w["ticket_id"] != "T-1" {
		t.Errorf("ticket_id %v, ticket (-want +got):\n%s", w["ticket_id"], d)
	}
	if d := cmp.Diff(map[string]any{"user": "tickets-bot", "token": secret.Mask}, w["me"]); d != "" {
		t.Errorf("me (-want +got):\n%s", d)
	}
	for _, f := range []string{tr, cas} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) {
			t.Errorf("%s holds the plugin's token", filepath.Base(f))
		}
		if !strings.Contains(string(b), "host.tickets.whoami") || !strings.Contains(string(b), secret.Mask) {
			t.Errorf("%s lacks the whoami call or its masked token:\n%s", filepath.Base(f), b)
		}
	}
	// The cassette answers the calls: the run replays with no plugin.
	if err := os.Remove(filepath.Join(dir, "bin", "tickets")); err != nil {
		t.Fatal(err)
	}
	code, out2, errs := runCLI(t, "", "run", app, "--workspace", dir, "--trace", filepath.Join(dir, "t2.jsonl"), "--cassette", cas,
		"--intents", "file title=printer,whoami,done")
	if code != exitOK || !strings.Contains(out2, "ticket T-1: printer (open)") {
		t.Errorf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, out2, errs)
	}
}

// kitsoki validate asks the plugin host.describe and checks the story's
// calls of it, with file:line:col.
func TestValidateHostPluginDescribe(t *testing.T) {
	t.Setenv("KITSOKI_TEST_TICKETS_TOKEN", "x")
	dir := goHostPluginDir(t)
	code, out, errs := runCLI(t, "", "validate", filepath.Join(dir, "app.yaml"), "--workspace", dir)
	if code != exitOK {
		t.Fatalf("app.yaml: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "", "validate", filepath.Join(dir, "bad.yaml"), "--workspace", dir)
	want := `bad.yaml:10:17: states.desk.on_enter[0].invoke: invoke "host.tickets.reopen": host plugin host.tickets has no op "reopen" (its ops: "close", "create", "get", "whoami")
bad.yaml:12:17: states.desk.on_enter[1].with: invoke "host.tickets.create": with: does not match the args_schema host plugin host.tickets describes for op "create": /priority: enum: value must be one of 'low', 'normal', 'high'
2 errors
`
	if code != exitLoad || errs != want {
		t.Errorf("bad.yaml: exit %d, want %d; stderr (-want +got):\n%s", code, exitLoad, cmp.Diff(want, errs))
	}
}

// A real run of the Python example host plugin (stories/host-plugin-py):
// it answers, then crashes in a call; the crash is the call's error, its
// on_error fires and the handled-error line is printed.
func TestRunPythonHostPlugin(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: skipping the Python example host plugin")
	}
	const app = "../../stories/host-plugin-py/app.yaml"
	// validate asks the Python plugin host.describe: the story's calls are
	// ops it lists.
	if code, out, errs := runCLI(t, "", "validate", app); code != exitOK {
		t.Fatalf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", app, "--trace", tr, "--intents", "file title=printer,crash,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Last ticket: PY-1 printer.") {
		t.Errorf("stdout lacks the filed ticket:\n%s", out)
	}
	crash := `host plugin host.tickets: plugin_crash: read response: EOF (plugin closed stdout); plugin exit status 3; ` +
		`stderr tail: "tickets_plugin: opened PY-1 (printer)\ntickets_plugin: crashing on purpose\n"`
	if !strings.Contains(out, "The ticket plugin failed: "+crash) {
		t.Errorf("stdout lacks the trouble view:\n%s", out)
	}
	line := "host error: host.tickets.crash (call crash): " + crash + " — on_error → trouble"
	if !strings.Contains(errs, line+"\n") {
		t.Errorf("stderr lacks the handled-error line\n%s\n:\n%s", line, errs)
	}
	if w := worldSets(t, tr); w["ticket_id"] != "PY-1" {
		t.Errorf("ticket_id = %v", w["ticket_id"])
	}
}

// kitsoki hosts --story lists the story's host plugins after the built-in
// table, with the ops host.describe gives; a plugin that cannot be
// described is shown and exits 2 with the error at its declaration; a
// story that does not load prints only its error.
func TestHostsListsStoryHostPlugins(t *testing.T) {
	t.Setenv("KITSOKI_TEST_TICKETS_TOKEN", "x")
	dir := goHostPluginDir(t)
	app := filepath.Join(dir, "app.yaml")
	code, out, errs := runCLI(t, "", "hosts", "--story", app, "--workspace", dir)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	want := `
host plugins of ` + app + `:

host.tickets, host.tickets.*  subprocess ./bin/tickets (app.yaml:6:3)
  host.tickets.close  Close a ticket by id.
    with:
      id  string  required
  host.tickets.create  Open a ticket; returns it.
    with:
      priority          one of "low", "normal", "high"
      title     string  required
  host.tickets.get  Read a ticket by id.
    with:
      id  string  required
  host.tickets.whoami  The account the plugin's token belongs to.
`
	builtins, plugins, ok := strings.Cut(out, "\nhost plugins of ")
	if !ok || !strings.Contains(builtins, "host.run  Run a program") {
		t.Fatalf("stdout is not the built-in table then the plugins:\n%s", out)
	}
	if d := cmp.Diff(want, "\nhost plugins of "+plugins); d != "" {
		t.Errorf("plugin listing (-want +got):\n%s", d)
	}

	// The plugin does not start: listed with the error, exit 2.
	if err := os.Remove(filepath.Join(dir, "bin", "tickets")); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "", "hosts", "--story", app, "--workspace", dir)
	spawn := `host.describe failed: host plugin host.tickets: plugin_crash: spawn "` + filepath.Join(dir, "bin", "tickets") + `": `
	if code != exitLoad || !strings.HasPrefix(errs, "app.yaml:6:3: host_plugins.host.tickets: "+spawn) {
		t.Errorf("exit %d, want %d; stderr:\n%s\nwant it to start with app.yaml:6:3: host_plugins.host.tickets: %s", code, exitLoad, errs, spawn)
	}
	if !strings.Contains(out, "(app.yaml:6:3)\n  "+spawn) {
		t.Errorf("stdout lacks the plugin with its error:\n%s", out)
	}

	// A story without host plugins says so.
	plain := filepath.Join("testdata", "hostrun", "app.yaml")
	code, out, errs = runCLI(t, "", "hosts", "--story", plain)
	if none := "host plugins of " + plain + ": none (the story declares no host_plugins:)\n"; code != exitOK || !strings.HasSuffix(out, none) {
		t.Errorf("exit %d; stdout does not end with %q:\n%s\n%s", code, none, out, errs)
	}

	// A story that does not load: its error only.
	missing := filepath.Join(dir, "missing.yaml")
	code, out, errs = runCLI(t, "", "hosts", "--story", missing)
	if code != exitLoad || out != "" || !strings.Contains(errs, "missing.yaml: cannot read story file") {
		t.Errorf("exit %d, want %d; stdout %q; stderr:\n%s", code, exitLoad, out, errs)
	}
}
