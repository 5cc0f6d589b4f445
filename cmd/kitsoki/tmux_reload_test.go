package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
)

// PgUp scrolls the transcript back half a screen at a time, down to its
// first line; the banner then says PgDn scrolls down; PgDn goes back to
// the end, and the banner drops the note.
func TestTUIInTmuxScrollsTheTranscript(t *testing.T) {
	const w, h = 80, 24
	dir := t.TempDir()
	p := newTmuxPane(t, dir, w, h, tuiEnv(t), "run", "--trace", filepath.Join(dir, "t.jsonl"), testAbs(t, "../../stories/hello"))
	p.waitFor("[lobby] Nobody is being greeted.")
	names := []string{"Ada", "Bob", "Cy", "Di", "Ed", "Flo"}
	for i, n := range names {
		p.text("greet name=" + n)
		p.keys("Enter")
		p.waitFor(n + " was greeted (casual).")
		p.text("again")
		p.keys("Enter")
		p.waitFor(fmt.Sprintf("Greeted so far: %d.", i+1))
	}
	rows := p.waitFor("> greet name=Flo")
	all := strings.Join(rows, "\n")
	if strings.Contains(all, "> greet name=Ada") || strings.Contains(all, "PgDn scrolls down") {
		t.Fatalf("the transcript's start should be scrolled off before PgUp:\n%s", all)
	}
	checkFrame(t, rows, w, h)

	p.keys("PPage")
	rows = p.waitFor("PgDn scrolls down", "> greet name=Bob")
	if all := strings.Join(rows, "\n"); strings.Contains(all, "> greet name=Flo") {
		t.Errorf("PgUp did not move the transcript back:\n%s", all)
	}
	checkFrame(t, rows, w, h)
	// Back to the first line: the session's line and the first greeting.
	p.keys("PPage", "PPage", "PPage")
	rows = p.waitFor("kitsoki: session ", "> greet name=Ada", "Greeted so far: 0.")
	checkFrame(t, rows, w, h)

	p.keys("NPage", "NPage", "NPage", "NPage", "NPage")
	rows = p.waitFor("> greet name=Flo", "Greeted so far: 6.")
	if all := strings.Join(rows, "\n"); strings.Contains(all, "PgDn scrolls down") || strings.Contains(all, "> greet name=Ada") {
		t.Errorf("PgDn did not come back to the end:\n%s", all)
	}
	checkFrame(t, rows, w, h)

	// New output follows the end even when scrolled back.
	p.keys("PPage")
	p.waitFor("PgDn scrolls down")
	p.text("greet name=Gus")
	p.keys("Enter")
	rows = p.waitFor("Gus was greeted (casual).")
	if all := strings.Join(rows, "\n"); strings.Contains(all, "PgDn scrolls down") {
		t.Errorf("a new turn did not follow the transcript's end:\n%s", all)
	}
	p.keys("C-d")
	p.waitFor("[exit 6]")
}

// slowStory is a story whose one call runs until it is cancelled.
const slowStory = `app: {id: slow, title: "Slow"}
hosts: [host.run]
world:
  out: {type: string, default: ""}
intents:
  wait: {description: "Run a long call."}
  bye: {description: "Leave."}
root: idle
states:
  idle:
    description: "Nothing running."
    on:
      wait: [{target: waiting}]
      bye: [{target: gone}]
  waiting:
    description: "A long call."
    on_enter:
      - invoke: host.run
        id: nap
        with: {cmd: sleep, args: ["600"], fail_on_error: true}
        bind: {out: stdout}
        on_error: idle
  gone: {terminal: true}
`

// While a call runs, the Esc menu's first item cancels it: the call stops,
// its on_error takes the session back, and the UI says it was cancelled
// without claiming a Ctrl-C was pressed (one Ctrl-C after it does not
// quit). Without a call running the menu has no cancel item.
func TestTUIInTmuxMenuCancelsTheCall(t *testing.T) {
	const w, h = 80, 24
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(slowStory), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newTmuxPane(t, dir, w, h, tuiEnv(t), "run", "app.yaml")
	p.waitFor("[idle] Nothing running.")
	p.keys("Escape")
	rows := p.waitFor("Menu", "❯ i    Intents of this state")
	if all := strings.Join(rows, "\n"); strings.Contains(all, "Cancel the running call") {
		t.Errorf("the menu offers to cancel with no call running:\n%s", all)
	}
	p.keys("Escape")
	p.waitFor("[idle] Nothing running.")

	p.text("wait")
	p.keys("Enter")
	p.waitFor("host.run", "(Ctrl-C cancels)")
	p.keys("Escape")
	rows = p.waitFor("Menu", "❯ c    Cancel the running call", "q    Quit")
	checkFrame(t, rows, w, h)
	p.keys("c")
	rows = p.waitFor("(cancelled)", "on_error → idle", "[idle] Nothing running.")
	all := strings.Join(rows, "\n")
	if !strings.Contains(all, "host error: host.run (call nap): command stopped: the run was cancelled") {
		t.Errorf("the cancelled call is not reported:\n%s", all)
	}
	if strings.Contains(all, "Ctrl-C again quits") {
		t.Errorf("a cancel from the menu is shown as a Ctrl-C:\n%s", all)
	}
	checkFrame(t, rows, w, h)
	// One Ctrl-C now is a first one: it warns and does not quit.
	p.keys("C-c")
	p.waitFor("(Ctrl-C again quits; :quit leaves)")
	p.text("bye")
	p.keys("Enter")
	p.waitFor("[exit 0]")
}

// :reload keeps the command line's --world: the session goes on with the
// world it has (not set again from the flags), and a reloaded story that
// no longer declares a --world key is refused, the session going on.
func TestTUIInTmuxReloadKeepsWorld(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	b, err := os.ReadFile("../../stories/hello/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"prompts/greet.md", "schemas/greeting.json"} {
		c, err := os.ReadFile(filepath.Join("../../stories/hello", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orig := strings.Replace(string(b), "  greetings: {type: int, default: 0}\n",
		"  greetings: {type: int, default: 0}\n  visitor: {type: string, default: \"\"}\n", 1)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(app, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(orig)
	p := newTmuxPane(t, dir, 100, 30, tuiEnv(t), "run", "--world", "greetings=3", "--world", "visitor=Zed", app)
	p.waitFor("[lobby] Nobody is being greeted.", "Greeted so far: 3.")
	p.text("greet name=Ada")
	p.keys("Enter")
	p.waitFor("Ada was greeted (casual).", "[greeted]")

	write(strings.Replace(orig, `description: "Greeting delivered."`, `description: "Greeting delivered, reloaded."`, 1))
	p.text(":reload")
	p.keys("Enter")
	p.waitFor("[greeted] Greeting delivered, reloaded.")
	p.text("again")
	p.keys("Enter")
	// 4, not 3: the world is the session's, the flags set only its start.
	p.waitFor("Greeted so far: 4.")
	p.text(":world")
	p.keys("Enter")
	p.waitFor("World", "visitor", "Zed")
	p.keys("Escape")
	p.waitFor("[lobby]")

	write(strings.Replace(orig, "  visitor: {type: string, default: \"\"}\n", "", 1))
	p.text(":reload")
	p.keys("Enter")
	p.waitFor("reload refused; the session goes on in the story as it was", "visitor")
	p.text("bye")
	p.keys("Enter")
	p.waitFor("[exit 0]", "Bye! 4 greeting(s) today.")
}

// :reload keeps the command line's --profile and the live switches taken
// since: the reloaded run's calls go to the profile's endpoint with the
// switched model; and --max-cost counts what the run spent before the
// reload.
func TestTUIInTmuxReloadKeepsProfile(t *testing.T) {
	t.Run("profile and switch", func(t *testing.T) {
		f := fakeopenai.NewFunc(t, greeter)
		dir := helloCopy(t, profileYAML(f))
		env := append(tuiEnv(t), "KITSOKI_TEST_OPENAI_KEY="+testKey)
		p := newTmuxPane(t, dir, 100, 30, env, "run", "--profile", "fast", "app.yaml")
		p.waitFor("[lobby] Nobody is being greeted.")
		p.text("greet name=Ada")
		p.keys("Enter")
		p.waitFor("Ada was greeted", "[greeted]")
		if f.Count() != 1 {
			t.Fatalf("%d requests to the profile's endpoint, want 1", f.Count())
		}
		p.text(":model gpt-5-mini")
		p.keys("Enter")
		p.waitFor("agent: profile fast (model gpt-5-mini)")
		p.text(":reload")
		p.keys("Enter")
		p.waitFor("resuming session", "[greeted]")
		p.text(":provider")
		p.keys("Enter")
		p.waitFor("agent: profile fast (model gpt-5-mini)\n:provider takes")
		p.text("again")
		p.keys("Enter")
		p.waitFor("[lobby]")
		p.text("greet name=Bob")
		p.keys("Enter")
		p.waitFor("Bob was greeted", "[greeted]")
		if f.Count() != 2 {
			t.Fatalf("%d requests to the profile's endpoint, want 2: the reloaded run lost --profile", f.Count())
		}
		if m := f.Request(1).Body["model"]; m != "gpt-5-mini" {
			t.Errorf("model after the reload %v, want the switched gpt-5-mini", m)
		}
		p.text("bye")
		p.keys("Enter")
		p.waitFor("[exit 0]")
	})
	t.Run("max-cost", func(t *testing.T) {
		f := fakeopenai.NewFunc(t, greeter)
		dir := helloCopy(t, profileYAML(f))
		env := append(tuiEnv(t), "KITSOKI_TEST_OPENAI_KEY="+testKey)
		// A greeting costs $0.000864 (TestMaxCostStopsTheRun): over the cap.
		p := newTmuxPane(t, dir, 100, 30, env, "run", "--profile", "fast", "--max-cost", "0.0005", "app.yaml")
		p.waitFor("[lobby] Nobody is being greeted.")
		p.text("greet name=Ada")
		p.keys("Enter")
		p.waitFor("Ada was greeted", "[greeted]")
		p.text(":reload")
		p.keys("Enter")
		p.waitFor("resuming session", "[greeted]")
		p.text("again")
		p.keys("Enter")
		p.waitFor("[lobby]")
		p.text("greet name=Bob")
		p.keys("Enter")
		p.waitFor("cost cap reached: --max-cost is $0.0005")
		if f.Count() != 1 {
			t.Errorf("%d requests: the reload reset --max-cost's count", f.Count())
		}
		p.keys("C-d")
		p.waitFor("[exit ")
	})
}
