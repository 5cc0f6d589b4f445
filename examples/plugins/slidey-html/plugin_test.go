package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const deck = `{"meta": {"title": "Bug-fix report"},
 "scenes": [
  {"type": "title", "eyebrow": "BUG-1", "title": "Greet exclaims again", "subtitle": "one character, one test"},
  {"type": "cards", "title": "What changed", "cards": [{"label": "greet.go", "sub": "adds the !"}, {"label": "greet_test.go", "sub": "pins it"}]},
  {"type": "narrative", "title": "Verified", "body": "go test ./... passes on main.", "bullets": ["RED before", "GREEN after"]}]}`

const app = `app: {id: deck}
host_plugins:
  host.slidey:
    plugin: subprocess
    command: ./bin/slidey-html
world:
  path: {type: string, default: ""}
  semantic: {type: string, default: ""}
  error: {type: string, default: ""}
  format: {type: string, default: html}
root: rendering
states:
  rendering:
    on_enter:
      - invoke: host.slidey.render
        with: {spec_path: deck.json, format: "{{ world.format }}"}
        bind: {path: path, semantic: semantic_path}
        on_error: failed
    terminal: true
  failed:
    on_enter:
      - set: {error: "{{ world.last_error }}"}
    terminal: true
`

// deckDir is a story tree with the plugin built into bin/.
func deckDir(t *testing.T, story string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go toolchain not in PATH")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{".kitsoki-root": "", "app.yaml": story, "deck.json": deck} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "slidey-html"), "github.com/kitsoki/kitsoki/examples/plugins/slidey-html")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build slidey-html: %v\n%s", err, out)
	}
	return dir
}

func run(t *testing.T, dir string, world map[string]any) map[string]any {
	t.Helper()
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "deck-1", World: world}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Session().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt.Session().World()
}

// A story's host.slidey.render, which kitsoki refuses without a product,
// is served by this plugin: the deck is rendered to HTML with its
// semantic sidecar, and a format it cannot render takes on_error.
func TestSlideyStandIn(t *testing.T) {
	dir := deckDir(t, app)
	w := run(t, dir, nil)
	if w["error"] != "" {
		t.Fatalf("render failed: %v", w["error"])
	}
	if w["path"] != filepath.Join(dir, "deck.html") {
		t.Errorf("path %v", w["path"])
	}
	html, err := os.ReadFile(filepath.Join(dir, "deck.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>Bug-fix report</title>", "Greet exclaims again", "<strong>greet_test.go</strong><br>pins it", "<li>GREEN after</li>", `data-type="narrative"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	sem, err := os.ReadFile(w["semantic"].(string))
	if err != nil || !strings.Contains(string(sem), `"title": "What changed"`) {
		t.Errorf("semantic sidecar: %s %v", sem, err)
	}
	w = run(t, dir, map[string]any{"format": "mp4"})
	if got, _ := w["error"].(string); !strings.Contains(got, `format "mp4" needs the real slidey (this stand-in renders html only)`) {
		t.Errorf("mp4: %q", got)
	}
}

// Without the plugin the story does not load: the refusal names slidey and
// the host-plugin route.
func TestRefusedWithoutThePlugin(t *testing.T) {
	dir := t.TempDir()
	bare := strings.Replace(app, "host_plugins:\n  host.slidey:\n    plugin: subprocess\n    command: ./bin/slidey-html\n", "", 1)
	for name, body := range map[string]string{".kitsoki-root": "", "app.yaml": bare} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err == nil || !strings.Contains(err.Error(), "kitsoki does not provide host.slidey (it needs slidey); serve it from a host plugin or remove the call") {
		t.Errorf("load: %v", err)
	}
}
