package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// toolStory is a story whose plugin declares agent tools. The plugin is
// never started: listing, enabling, disabling and reloading do not need
// its process.
func toolStory(tools string) string {
	return `app: {id: tools}
agent_plugins:
  agent.tagger:
    plugin: subprocess
    command: ./bin/tagger
    agent_tools:
` + tools + `
root: idle
states:
  idle: {description: "Idle.", on: {noop: [{target: idle}]}}
intents:
  noop: {description: "Nothing."}
`
}

const addTag = `      - {name: add_tag, description: "Add a tag.", surfaces: [kanban-task], input_schema: {type: object}}
`

func startToolStory(t *testing.T, src, control string) (*pluginRuntime, string, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "sess-1"},
		Tools: runtime.Tools{Plugins: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	var stderr bytes.Buffer
	pr, err := startPlugins(st, rt.Plugins(), control, slog.New(slog.DiscardHandler), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	return pr, path, &stderr
}

func TestPromptPluginCommands(t *testing.T) {
	pr, path, _ := startToolStory(t, toolStory(addTag), "")
	run := func(line string) (string, string) {
		t.Helper()
		var out, errw bytes.Buffer
		if !pr.command(context.Background(), line, &out, &errw) {
			t.Fatalf("%q is not a plugin command", line)
		}
		return out.String(), errw.String()
	}
	space := regexp.MustCompile(` +`)
	status := func() string { out, _ := run(":plugins"); return space.ReplaceAllString(strings.TrimSpace(out), " ") }

	if got := status(); got != "agent.tagger active kitsoki_agent_tagger_add_tag" {
		t.Errorf(":plugins = %q", got)
	}
	rev := pr.svc.Catalog().Current().Revision
	if out, _ := run(":disable agent.tagger"); out != "agent.tagger is disabled\n" {
		t.Errorf(":disable printed %q", out)
	}
	if n := len(pr.svc.Catalog().Current().Tools); n != 0 || pr.svc.Catalog().Current().Revision != rev+1 {
		t.Errorf("after :disable the catalog has %d tools at revision %d", n, pr.svc.Catalog().Current().Revision)
	}
	if out, _ := run(":enable agent.tagger"); out != "agent.tagger is active\n" {
		t.Errorf(":enable printed %q", out)
	}
	if _, errw := run(":enable"); errw != "kitsoki: write :enable <alias>, e.g. :enable agent.tagger\n" {
		t.Errorf(":enable without an alias: %q", errw)
	}
	if _, errw := run(":disable agent.nope"); errw != "kitsoki: no plugin \"agent.nope\" contributes agent tools (plugins with agent_tools: agent.tagger)\n" {
		t.Errorf(":disable of an unknown alias: %q", errw)
	}

	// A reload whose declaration is invalid keeps the previous tools.
	broken := toolStory(strings.Replace(addTag, "add_tag", "Add-Tag", 1))
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errw := run(":reload")
	if !strings.HasPrefix(errw, "kitsoki: reload failed; the previous plugins and tools stay in force:\n") ||
		!strings.Contains(errw, `agent_plugins.agent.tagger.agent_tools[0].name: tool name "Add-Tag" must match`) {
		t.Errorf(":reload of a broken story printed %q", errw)
	}
	if got := status(); got != "agent.tagger active kitsoki_agent_tagger_add_tag" {
		t.Errorf("after a failed reload :plugins = %q", got)
	}
	// A valid reload applies the new declarations.
	grown := toolStory(addTag + `      - {name: drop_tag, description: "Drop a tag.", surfaces: [office-task], input_schema: {type: object}}
`)
	if err := os.WriteFile(path, []byte(grown), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw := run(":reload")
	if errw != "" || !strings.HasPrefix(out, "reloaded the plugins of "+path+"\n") {
		t.Errorf(":reload printed %q / %q", out, errw)
	}
	if got := status(); got != "agent.tagger active kitsoki_agent_tagger_add_tag, kitsoki_agent_tagger_drop_tag" {
		t.Errorf("after reload :plugins = %q", got)
	}
	if pr.command(context.Background(), "greet name=Ada", &bytes.Buffer{}, &bytes.Buffer{}) {
		t.Error("an intent was taken for a plugin command")
	}
}

func TestInteractivePromptRoutesPluginCommands(t *testing.T) {
	pr, _, _ := startToolStory(t, toolStory(addTag), "")
	code, out, _ := runInteractiveWith(t, pr, ":plugins\n:disable agent.tagger\n:help\n")
	if code != exitIncomplete {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"kitsoki_agent_tagger_add_tag", "agent.tagger is disabled", ":enable <alias> / :disable <alias>"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestControlMCPServesPluginControls(t *testing.T) {
	_, _, stderr := startToolStory(t, toolStory(addTag), "127.0.0.1:0")
	m := regexp.MustCompile(`plugin controls \(MCP, configuration surface\) at (http://127\.0\.0\.1:\d+/mcp)\nkitsoki: send the header "Authorization: Bearer [A-Za-z0-9_-]{43}"\n`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr: %q", stderr.String())
	}
	res, err := http.Post(m[1], "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unauthenticated request got %d, want 401", res.StatusCode)
	}
	if _, _, err := func() (*pluginRuntime, string, error) {
		st, _ := story.Load(hello)
		defer st.Close()
		rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: "s"}, Tools: runtime.Tools{Plugins: true}})
		if err != nil {
			return nil, "", err
		}
		defer rt.Close()
		_, err = startPlugins(st, rt.Plugins(), "192.0.2.1:80", slog.New(slog.DiscardHandler), &bytes.Buffer{})
		return nil, "", err
	}(); err == nil || !strings.Contains(err.Error(), "--control-mcp: mcp http: address \"192.0.2.1:80\" is not a loopback address") {
		t.Errorf("a non-loopback address: %v", err)
	}
}

// runInteractiveWith is runInteractive (the hello story at the prompt)
// with plugin commands wired to pr.
func runInteractiveWith(t *testing.T, pr *pluginRuntime, input string) (int, string, string) {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"},
		Trace: runtime.Trace{Path: filepath.Join(t.TempDir(), "t.jsonl")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var out, errb bytes.Buffer
	con := &driver.Console{D: localDriver(rt), Out: &out, Err: &errb, Extra: pr}
	con.Begin(context.Background())
	code := con.Prompt(context.Background(), driver.NewLines(strings.NewReader(input)))
	return code, out.String(), errb.String()
}
