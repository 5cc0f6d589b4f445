package testrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A flow that binds the ticket interface to host.local_files.ticket runs
// the real handler over the workspace's issues/ files: get binds a
// ticket, transition rewrites it, and a missing ticket takes on_error.
func TestHostBindingsTicketInterface(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		".kitsoki-root": "",
		"app.yaml": `app: {id: tickets}
host_interfaces:
  ticket:
    operations: {get: {input: {id: string}}, transition: {input: {id: string, to: string}}}
    default: host.local_files.ticket
world:
  id: {type: string, default: ""}
  title: {type: string, default: ""}
intents:
  pick: {slots: {id: {type: string, required: true}}}
  close: {}
root: idle
states:
  idle:
    on:
      pick: [{target: picked, effects: [{set: {id: "{{ slots.id }}"}}]}]
  picked:
    on_enter:
      - invoke: iface.ticket.get
        with: {id: "{{ world.id }}"}
        bind: {title: title}
        on_error: idle
    on:
      close: [{target: idle, effects: [{invoke: iface.ticket.transition, with: {id: "{{ world.id }}", to: resolved}}]}]
`,
		"issues/features/F-1.md": "---\ntitle: Export CSV\nstatus: open\n---\nBody.\n",
		"flows/f.yaml": `test_kind: flow
app: ../app.yaml
host_bindings:
  ticket: host.local_files.ticket
turns:
  - intent: {name: pick, slots: {id: F-1}}
    expect_state: picked
    expect_world: {title: Export CSV}
    expect_host_calls: [{handler: host.local_files.ticket.get, args: {id: F-1}, times: 1}]
  - intent: close
    expect_state: idle
  - intent: {name: pick, slots: {id: F-404}}
    expect_state: idle
expect_no_errors: true
`,
	})
	_, out := runBindings(t, filepath.Join(dir, "app.yaml"), "flows/f.yaml")
	if want := "PASS  f.yaml\n"; out != want {
		t.Errorf("report:\n%s\nwant:\n%s", out, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "issues/features/F-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "status: resolved\n") {
		t.Errorf("F-1.md after the flow:\n%s", b)
	}
}
