package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// tmuxPane runs kitsoki in a pane of a tmux server of its own (its own
// socket, no configuration file), at a fixed size, so a test sees the
// screen a person would: capture-pane gives its rows as text.
type tmuxPane struct {
	t    *testing.T
	sock string
}

// newTmuxPane starts `kitsoki ARGS` (the test binary as the CLI) in dir,
// in a w×h pane. When kitsoki exits the pane prints "[exit N]" and stays.
// Without tmux the test is skipped, except with CI=true (make test
// installs it: scripts/setup-tmux.sh).
func newTmuxPane(t *testing.T, dir string, w, h int, env []string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (scripts/setup-tmux.sh installs it)")
		}
		t.Skip("tmux is not installed (scripts/setup-tmux.sh installs it)")
	}
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	// env -i: the pane sees only env, never the test's own environment.
	// CI (set on CI machines) makes termenv treat the pane as no terminal
	// and draw no styles; NO_COLOR would do the same.
	var cmd strings.Builder
	cmd.WriteString("env -i KITSOKI_TEST_AS_CLI=1")
	for _, e := range env {
		cmd.WriteString(" " + shellQuote(e))
	}
	cmd.WriteString(" " + shellQuote(os.Args[0]))
	for _, a := range args {
		cmd.WriteString(" " + shellQuote(a))
	}
	cmd.WriteString(`; echo "[exit $?]"; sleep 600`)
	p.tmux("new-session", "-d", "-s", "k", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir, cmd.String())
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func testAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends keys as tmux send-keys names them ("Enter", "Escape",
// "Tab", "C-d") or literal text (-l).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "k"}, keys...)...)
}

func (p *tmuxPane) text(s string) { p.t.Helper(); p.tmux("send-keys", "-t", "k", "-l", s) }

// screen is the pane's rows now.
func (p *tmuxPane) screen() []string {
	p.t.Helper()
	return strings.Split(strings.TrimSuffix(p.tmux("capture-pane", "-p", "-t", "k"), "\n"), "\n")
}

// waitFor waits, at most tuiPatience, until the screen shows every want;
// it returns that screen.
func (p *tmuxPane) waitFor(want ...string) []string {
	p.t.Helper()
	deadline := time.Now().Add(tuiPatience)
	for {
		rows := p.screen()
		all := strings.Join(rows, "\n")
		missing := ""
		for _, w := range want {
			if !strings.Contains(all, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return rows
		}
		if time.Now().After(deadline) || (strings.Contains(all, "[exit ") && !strings.Contains(missing, "[exit ")) {
			p.t.Fatalf("the pane never showed %q; it shows:\n%s", missing, all)
		}
		time.Sleep(50 * time.Millisecond) // polls the pane: the program signals nothing else
	}
}

// resize sets the pane's size; the program gets SIGWINCH.
func (p *tmuxPane) resize(w, h int) {
	p.t.Helper()
	p.tmux("resize-window", "-t", "k", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h))
}

// checkFrame fails unless the screen is one whole frame of the UI at
// width w and height h: h rows, none wider than w, the banner on the
// first row and nowhere else, one rule over the live area, the input
// line after it: nothing of an earlier frame left over.
func checkFrame(t *testing.T, rows []string, w, h int) {
	t.Helper()
	all := strings.Join(rows, "\n")
	if len(rows) != h {
		t.Errorf("%d rows, want %d:\n%s", len(rows), h, all)
	}
	for i, r := range rows {
		if n := utf8.RuneCountInString(r); n > w {
			t.Errorf("row %d is %d wide, more than %d: %q", i, n, w, r)
		}
	}
	if len(rows) == 0 || !strings.Contains(rows[0], "Esc menu") || strings.Count(all, "Esc menu") != 1 {
		t.Errorf("the banner is not the first row, once:\n%s", all)
	}
	rules, input := 0, -1
	for i, r := range rows {
		if strings.HasPrefix(r, strings.Repeat("─", w)) {
			rules++
		}
		if strings.HasPrefix(r, "> ") || r == ">" {
			input = i
		}
	}
	if rules != 1 || input < 0 {
		t.Errorf("want one rule and an input line, got %d rules, input at row %d:\n%s", rules, input, all)
	}
}

// tuiEnv is the environment of a TUI test's kitsoki: its own state,
// home and sessions directories, and a PATH without the Claude CLI, so free text the
// tiers cannot read fails its router call the same way on every machine.
func tuiEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"XDG_STATE_HOME=" + dir, "HOME=" + dir, "PATH=" + t.TempDir() + ":/usr/bin:/bin", "TERM=xterm-256color",
		"KITSOKI_SESSIONS_DIR=" + filepath.Join(dir, "sessions")}
}

// The banner names the story and the state and the keys, at both sizes;
// a long line (a router failure) is wrapped to the width, and after a
// resize to the other size every line is wrapped again, with nothing of
// the old frame left over.
func TestTUIInTmuxWrapsAndResizes(t *testing.T) {
	for _, size := range [][4]int{{80, 24, 200, 50}, {200, 50, 80, 24}} {
		w, h, w2, h2 := size[0], size[1], size[2], size[3]
		t.Run(fmt.Sprintf("%dx%d to %dx%d", w, h, w2, h2), func(t *testing.T) {
			dir := t.TempDir()
			p := newTmuxPane(t, dir, w, h, tuiEnv(t), "run", "--trace", filepath.Join(dir, "t.jsonl"), testAbs(t, "../../stories/hello"))
			rows := p.waitFor("Hello, kitsoki · lobby", "[lobby] Nobody is being greeted.")
			checkFrame(t, rows, w, h)
			say := "please could you greet my friend Ada Lovelace, who is visiting us from London today, in a formal register"
			p.text(say)
			p.keys("Enter")
			rows = p.waitFor("ROUTER_FAILED", "docs/agents/claude.md")
			checkFrame(t, rows, w, h)
			msg := "ROUTER_FAILED: \"" + say + "\" needs the router agent agent.claude, whose program claude is not installed: " +
				"install it (npm install -g @anthropic-ai/claude-code; see docs/agents/claude.md), or type the intent instead: bye, greet name=Ada"
			checkWrapped(t, rows, msg, w)
			p.resize(w2, h2)
			deadline := time.Now().Add(tuiPatience)
			for {
				rows = p.screen()
				if len(rows) == h2 && strings.Contains(rows[0], "Esc menu") && wrappedAt(rows, msg, w2) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the UI was not drawn again at %dx%d:\n%s", w2, h2, strings.Join(rows, "\n"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			checkFrame(t, rows, w2, h2)
			checkWrapped(t, rows, msg, w2)
			p.text(":quit")
			p.keys("Enter")
			p.waitFor("[exit 6]")
		})
	}
}

// checkWrapped fails unless msg is on the screen once, wrapped to the
// width: rows in a row that together are msg, each at most w wide.
func checkWrapped(t *testing.T, rows []string, msg string, w int) {
	t.Helper()
	if !wrappedAt(rows, msg, w) {
		t.Errorf("the screen does not show %q wrapped at %d:\n%s", msg, w, strings.Join(rows, "\n"))
	}
	if n := strings.Count(strings.Join(rows, "\n"), "ROUTER_FAILED"); n != 1 {
		t.Errorf("ROUTER_FAILED is on the screen %d times, want once", n)
	}
}

// wrappedAt reports whether the rows hold msg wrapped at width w: from
// the row that starts it, rows of at most w cells whose text, the breaks
// taken out, is msg; the last of them is wider than half the width at
// least once (a narrower frame's wrapping would not be).
func wrappedAt(rows []string, msg string, w int) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	want := squeeze(msg)
	for i, r := range rows {
		if !strings.HasPrefix(r, msg[:20]) {
			continue
		}
		got, widest := "", 0
		for j := i; j < len(rows) && len(got) < len(want); j++ {
			n := utf8.RuneCountInString(strings.TrimRight(rows[j], " "))
			if n > w {
				return false
			}
			widest = max(widest, n)
			got += squeeze(rows[j])
		}
		return got == want && (len(msg) <= w || widest > w-20)
	}
	return false
}

// screenEsc is the pane's rows with their styles (capture-pane -e).
func (p *tmuxPane) screenEsc() []string {
	p.t.Helper()
	return strings.Split(strings.TrimSuffix(p.tmux("capture-pane", "-e", "-p", "-t", "k"), "\n"), "\n")
}

// inputRow is the input line of the screen (plain, and with styles).
func (p *tmuxPane) inputRow() (string, string) {
	p.t.Helper()
	plain, esc := p.screen(), p.screenEsc()
	for i := len(plain) - 1; i >= 0; i-- {
		if strings.HasPrefix(plain[i], "> ") || plain[i] == ">" {
			return strings.TrimRight(plain[i], " "), esc[i]
		}
	}
	p.t.Fatalf("no input line on the screen:\n%s", strings.Join(plain, "\n"))
	return "", ""
}

// waitInput waits until the input line reads want (ghost text included).
func (p *tmuxPane) waitInput(want string) (string, string) {
	p.t.Helper()
	deadline := time.Now().Add(tuiPatience)
	for {
		plain, esc := p.inputRow()
		if plain == want {
			return plain, esc
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the input line reads %q, want %q", plain, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The banner, the route of a free-text turn with its tier and
// confidence, and the ghost suggestion taken with Tab, at both sizes.
func TestTUIInTmuxBannerRouteAndGhost(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			dir := t.TempDir()
			p := newTmuxPane(t, dir, w, h, tuiEnv(t), "run", "--trace", filepath.Join(dir, "t.jsonl"), testAbs(t, "../../stories/hello/app.yaml"))
			rows := p.waitFor("[lobby] Nobody is being greeted.")
			if !strings.HasPrefix(rows[0], " Hello, kitsoki · lobby ") || !strings.HasSuffix(rows[0], "Esc menu · Tab completes · :help · Ctrl-D quits") {
				t.Errorf("banner %q", rows[0])
			}
			checkFrame(t, rows, w, h)

			// A ghost: what Tab would complete, drawn after the cursor in
			// another style than the typed text.
			p.text("gre")
			_, esc := p.waitInput("> greet")
			if !strings.Contains(esc, "> gre\x1b[") {
				t.Errorf("the ghost is not styled apart from the typed text: %q", esc)
			}
			p.keys("Tab")
			_, esc = p.waitInput("> greet name=")
			if !strings.Contains(esc, "> greet \x1b[") {
				t.Errorf("after Tab the ghost is not the next slot: %q", esc)
			}
			p.keys("Tab")
			p.text("Ada")
			p.waitInput("> greet name=Ada")
			p.keys("Enter")
			rows = p.waitFor("Ada was greeted (casual).", "[greeted] Greeting delivered.")
			if strings.Contains(strings.Join(rows, "\n"), "↳ ") {
				t.Errorf("a typed line shows a route:\n%s", strings.Join(rows, "\n"))
			}
			checkFrame(t, rows, w, h)

			// Free text the verb-value tier reads: its route is shown.
			p.text("again")
			p.keys("Enter")
			p.waitFor("> again", "[lobby]")
			p.text("greet Grace")
			p.keys("Enter")
			rows = p.waitFor("↳ verb_value → greet name=Grace (confidence 1.00)", "Grace was greeted (casual).")
			checkFrame(t, rows, w, h)

			// A line of the history that begins with the input is the ghost
			// where there is nothing to complete.
			p.text("again")
			p.keys("Enter")
			p.waitFor("[lobby]")
			p.text("greet name=A")
			_, esc = p.waitInput("> greet name=Ada")
			if !strings.Contains(esc, "> greet name=A\x1b[") {
				t.Errorf("the history ghost is not styled apart: %q", esc)
			}
			p.keys("Tab", "Enter")
			p.waitFor("Hey Ada, good to see you!")
			p.keys("C-d")
			p.waitFor("[exit 6]")
		})
	}
}

// Esc opens the menu; its items run by their keys; the world viewer
// opens a map, and its edit sets a key for the next turn, which takes
// it (here: enough greetings to leave).
func TestTUIInTmuxMenuAndWorld(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			dir := t.TempDir()
			p := newTmuxPane(t, dir, w, h, tuiEnv(t), "run", "--trace", filepath.Join(dir, "t.jsonl"), testAbs(t, "../../stories/hello/app.yaml"))
			p.waitFor("[lobby]")
			p.keys("Escape")
			rows := p.waitFor("Menu", "❯ i    Intents of this state", "w    World: view and edit", "q    Quit")
			checkFrame(t, rows, w, h)
			p.keys("Down", "Down", "Down", "Enter") // Help
			p.waitFor("Esc        the menu", "PgUp/PgDn  scroll the transcript")
			p.keys("Escape")
			p.waitFor("Menu", "❯ i    Intents of this state")
			p.keys("w")
			rows = p.waitFor("World", "greetings", "e edits")
			checkFrame(t, rows, w, h)
			p.text(":world")
			// The viewer takes the keys: the rows move, nothing is typed.
			p.keys("Escape")
			p.waitFor("[lobby]")
			if in, _ := p.inputRow(); in != ">" {
				t.Errorf("keys typed in the viewer reached the input: %q", in)
			}
			p.text(":world")
			p.keys("Enter")
			p.waitFor("World", "greetings")
			// greeting, greetings, last_error, name, ...: to greetings.
			p.keys("Down")
			p.keys("e")
			p.waitFor("edit world.greetings (JSON")
			p.keys("C-u")
			p.text("5")
			p.keys("Enter")
			p.waitFor("world.greetings is set when the next turn starts")
			p.waitFor("greetings         5")
			p.keys("Escape")
			p.waitFor("[lobby]") // Esc and a letter at once would read as Alt-letter
			p.text("bye")
			p.keys("Enter")
			p.waitFor("[exit 0]", "Bye! 5 greeting(s) today.")
		})
	}
}

// The terminal UI and the plain prompt (--no-tui) take the same commands
// the same way: :back returns to the previous room, an unknown :word is
// refused with the closest command instead of being routed, and :quit
// before a terminal state exits 6 in both.
func TestTUIInTmuxSameCommandsAsThePrompt(t *testing.T) {
	for _, mode := range []string{"tui", "no-tui"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "--trace", filepath.Join(dir, "t.jsonl")}
			if mode == "no-tui" {
				args = append(args, "--no-tui")
			}
			p := newTmuxPane(t, dir, 80, 24, tuiEnv(t), append(args, testAbs(t, "../../stories/hello"))...)
			p.waitFor("[lobby] Nobody is being greeted.")
			p.text("greet name=Ada")
			p.keys("Enter")
			p.waitFor("Ada was greeted (casual).", "[greeted]")
			p.text(":back")
			p.keys("Enter")
			// The room before greeted is greeting, shown as it stands.
			p.waitFor("> :back", "[greeting] The greeter is composing a greeting.")
			p.text(":wrold")
			p.keys("Enter")
			rows := p.waitFor("unknown command :wrold (did you mean :world?); :help lists the commands")
			if all := strings.Join(rows, "\n"); strings.Contains(all, "ROUTER_FAILED") {
				t.Errorf(":wrold was routed as free text:\n%s", all)
			}
			p.text(":quit")
			p.keys("Enter")
			p.waitFor("[exit 6]")
		})
	}
}

// A run on a terminal that finds an unfinished session of the story asks
// whether to resume it: Enter resumes it where it stopped, n starts a new
// one; the terminal UI and the plain prompt alike.
func TestTUIInTmuxResumePrompt(t *testing.T) {
	for _, mode := range []string{"tui", "no-tui"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			env := tuiEnv(t) // one sessions directory for the three runs
			args := []string{"run"}
			if mode == "no-tui" {
				args = append(args, "--no-tui")
			}
			args = append(args, testAbs(t, "../../stories/hello"))
			first := newTmuxPane(t, dir, 80, 24, env, args...)
			first.waitFor("[lobby] Nobody is being greeted.")
			first.text("greet name=Ada")
			first.keys("Enter")
			first.waitFor("Ada was greeted (casual).", "[greeted]")
			first.text(":quit")
			first.keys("Enter")
			first.waitFor("[exit 6]")

			again := newTmuxPane(t, dir, 80, 24, env, args...)
			again.waitFor("of this story stopped in state", "Resume it? [Y/n]")
			again.keys("Enter")
			rows := again.waitFor("[greeted] Greeting delivered.")
			if all := strings.Join(rows, "\n"); strings.Contains(all, "[lobby]") {
				t.Errorf("the resumed session showed the lobby:\n%s", all)
			}
			again.text(":quit")
			again.keys("Enter")
			again.waitFor("[exit 6]")

			fresh := newTmuxPane(t, dir, 80, 24, env, args...)
			fresh.waitFor("Resume it? [Y/n]")
			fresh.text("n")
			fresh.keys("Enter")
			fresh.waitFor("[lobby] Nobody is being greeted.", "Greeted so far: 0.")
			fresh.keys("C-d")
			fresh.waitFor("[exit 6]")
		})
	}
}

// :reload re-reads the story and the session goes on in it where it was;
// a story that no longer loads, or that decides a turn taken differently,
// is refused and the session goes on as it was. The terminal UI and the
// plain prompt alike.
func TestTUIInTmuxReload(t *testing.T) {
	for _, mode := range []string{"tui", "no-tui"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-r", "../../stories/hello", dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			app := filepath.Join(dir, "hello", "app.yaml")
			orig, err := os.ReadFile(app)
			if err != nil {
				t.Fatal(err)
			}
			edit := func(from, to string) {
				t.Helper()
				if !strings.Contains(string(orig), from) {
					t.Fatalf("app.yaml lacks %q", from)
				}
				if err := os.WriteFile(app, []byte(strings.Replace(string(orig), from, to, 1)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"run"}
			if mode == "no-tui" {
				args = append(args, "--no-tui")
			}
			p := newTmuxPane(t, dir, 100, 30, tuiEnv(t), append(args, app)...)
			p.waitFor("[lobby] Nobody is being greeted.")
			p.text("greet name=Ada")
			p.keys("Enter")
			p.waitFor("Ada was greeted (casual).", "[greeted] Greeting delivered.")

			edit(`description: "Greeting delivered."`, `description: "Greeting delivered, and the story reloaded."`)
			p.text(":reload")
			p.keys("Enter")
			p.waitFor("[greeted] Greeting delivered, and the story reloaded.")

			edit(`root: lobby`, `root: [lobby`)
			p.text(":reload")
			p.keys("Enter")
			p.waitFor("reload refused; the session goes on in the story as it was", "app.yaml:")

			// The turn taken (greet, to greeting) now goes elsewhere.
			edit(`        - target: greeting`, `        - target: farewell`)
			p.text(":reload")
			p.keys("Enter")
			p.waitFor("the story as it is now decides differently: turn 1 in lobby")

			p.text("bye")
			p.keys("Enter")
			p.waitFor("[exit 0]", "Bye! 1 greeting(s) today.")
		})
	}
}
