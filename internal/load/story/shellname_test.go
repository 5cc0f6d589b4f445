package story

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadInline loads app (an app.yaml) from a fresh directory and returns
// its errors and warnings as lines.
func loadInline(t *testing.T, app string, opts ...Option) (errs, warns []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(app), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Load(filepath.Join(dir, "app.yaml"), opts...)
	if err != nil {
		var le *LoadError
		if !errors.As(err, &le) {
			t.Fatalf("Load error is %T: %v", err, err)
		}
		return lines(le.Diagnostics), lines(le.Warnings)
	}
	t.Cleanup(func() { st.Close() })
	return nil, lines(st.Warnings)
}

// validate warns about a shell-mode host.run command built from what the
// user typed (slots, event), and says nothing of one built from the world
// or of argv mode.
func TestWarnsShellCommandFromSlots(t *testing.T) {
	app := `app: {id: sh}
intents:
  go:
    slots: {text: {type: string}}
world:
  dir: {type: string, default: "."}
root: a
states:
  a:
    on:
      go:
        - target: .
          effects:
            - invoke: host.run
              with: {cmd: "echo {{ slots.text }}"}
            - invoke: host.run
              with: {cmd: "{{ event.slots.text }}"}
            - invoke: host.run
              with: {cmd: "ls {{ world.dir }}"}
            - invoke: host.run
              with: {cmd: echo, args: ["{{ slots.text }}"]}
            - invoke: host.run
              with: {cmd: "echo {{ slots.text }}", args: null}
`
	errs, warns := loadInline(t, app)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []string{
		`app.yaml:15:27: states.a.on.go[0].effects[0].with.cmd: host.run with.cmd is a shell command built from what the user typed (slots): each spliced value is shell-quoted, but prefer with.args (argv mode, no shell) for user input`,
		`app.yaml:17:27: states.a.on.go[0].effects[1].with.cmd: host.run with.cmd is a whole shell command line taken from what the user typed (event): it runs as bash unquoted; give the program in with.cmd and the values in with.args (argv mode, no shell)`,
		`app.yaml:23:27: states.a.on.go[0].effects[4].with.cmd: host.run with.cmd is a shell command built from what the user typed (slots): each spliced value is shell-quoted, but prefer with.args (argv mode, no shell) for user input`,
	}
	if d := cmp.Diff(want, warns); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// A templated invoke name must compile, and its literal text before the
// first {{ must begin some handler's name; the rest is checked when the
// call is made.
func TestTemplatedInvokeNames(t *testing.T) {
	app := `app: {id: names}
world:
  kind: {type: string, default: run}
root: a
states:
  a:
    on_enter:
      - invoke: "host.{{ world.kind }}"
        with: {cmd: "true"}
      - invoke: "{{ world.kind }}"
      - invoke: "hots.{{ world.kind }}"
      - invoke: "host.{{ nope.kind }}"
      - invoke: "host.agent.{{ world.kind }}"
`
	errs, _ := loadInline(t, app)
	want := []string{
		`app.yaml:11:17: states.a.on_enter[2].invoke: state "a": on_enter invoke "hots.{{ world.kind }}": no handler the run provides begins with "hots.", so the name cannot render to one (did you mean "host."?); fix the text before {{ (kitsoki hosts lists the handlers kitsoki provides)`,
		`app.yaml:12:26: states.a.on_enter[3].invoke: invalid template: unknown name "nope": an expression must start from one of world, slots, args, event, run, result, menu, item (did you mean world.nope?)`,
	}
	if d := cmp.Diff(want, errs); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	// Flows stub handlers: nothing is refused there.
	if errs, _ := loadInline(t, app[:len(app)-len(`      - invoke: "host.{{ nope.kind }}"
      - invoke: "host.agent.{{ world.kind }}"
`)], WithStubbedHosts()); len(errs) > 0 {
		t.Errorf("stubbed: %v", errs)
	}
}

// A view that reads a world key the story neither declares nor writes,
// and a bind: of a field its handler never returns, are found at load
// with a did-you-mean: an error where the handler's results are complete
// (host.run), a warning where they may not be (an agent verb) or for a
// view (a key may come from --world or a resumed world).
func TestViewAndBindTypos(t *testing.T) {
	app := `app: {id: typos}
world:
  receipt: {type: string, default: ""}
intents: {go: {}}
root: a
states:
  a:
    view: "Receipt: {{ world.reciept }} {{ world.receipt }} {{ world.later }} {{ world.last_error }}"
    on:
      go:
        - target: b
          effects:
            - invoke: host.run
              with: {cmd: "echo hi"}
              bind: {receipt: stdot, code: exit_code, later: "{{ result.okk }}"}
            - invoke: host.agent.ask
              with: {prompt: "hi"}
              bind: {receipt: answer.text, later: stdout}
            - invoke: host.run
              with: {cmd: "sleep 1"}
              background: true
              bind: {later: job_id}
  b:
    view:
      - prose: "{{ world.recipt }}"
`
	errs, warns := loadInline(t, app)
	wantErrs := []string{
		`app.yaml:15:31: states.a.on.go[0].effects[0].bind.receipt: bind reads "stdot", which host.run does not return (did you mean "stdout"?) (it returns: stdout, exit_code, ok, truncated, stdout_json, stdout_json_parse_error)`,
		`app.yaml:15:73: states.a.on.go[0].effects[0].bind.later: bind reads "okk", which host.run does not return (did you mean "ok"?) (it returns: stdout, exit_code, ok, truncated, stdout_json, stdout_json_parse_error)`,
	}
	if d := cmp.Diff(wantErrs, errs); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	wantWarns := []string{
		`app.yaml:8:30: states.a.view: the template reads world key "reciept", which world: does not declare and no set:, increment: or bind: writes (did you mean "receipt"?); it renders empty`,
		`app.yaml:18:31: states.a.on.go[0].effects[1].bind.receipt: bind reads "answer", which host.agent.ask does not return (it returns: ok, exit_code, submitted, submission, meta, stdout, rationale, claude_session_id); it may bind nothing`,
		`app.yaml:25:26: states.b.view[0].prose: the template reads world key "recipt", which world: does not declare and no set:, increment: or bind: writes (did you mean "receipt"?); it renders empty`,
	}
	if d := cmp.Diff(wantWarns, warns); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}
