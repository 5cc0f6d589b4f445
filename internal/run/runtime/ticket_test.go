package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// A real run of a story whose ticket interface keeps its default,
// host.local_files.ticket: iface.ticket.get binds a ticket of the
// workspace, iface.ticket.comment and .transition write it back, and a
// missing ticket takes the invoke's on_error.
func TestTicketInterfaceRealRun(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		".kitsoki-root": "",
		"app.yaml": `app: {id: tickets}
host_interfaces:
  ticket:
    operations:
      get: {input: {id: string}}
      comment: {input: {id: string, body: string}}
      transition: {input: {id: string, to: string}}
    default: host.local_files.ticket
world:
  id: {type: string, default: ""}
  title: {type: string, default: ""}
  failed: {type: string, default: ""}
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
        on_error: missing
    on:
      close:
        - target: done
          effects:
            - invoke: iface.ticket.comment
              with: {id: "{{ world.id }}", body: "Closed by the run."}
            - invoke: iface.ticket.transition
              with: {id: "{{ world.id }}", to: resolved}
  missing:
    on_enter:
      - set: {failed: "{{ world.last_error }}"}
  done: {terminal: true}
`,
		"issues/bugs/B-1.md": "---\ntitle: Broken list\nstatus: open\n---\nThe list disappears.\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	open := func(id string) *runtime.Runtime {
		rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: id}, Clock: clock.NewFake(start)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		if _, err := rt.Session().Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	ctx := context.Background()

	sess := open("found").Session()
	if _, err := sess.Turn(ctx, "pick", map[string]any{"id": "B-1"}, ""); err != nil {
		t.Fatal(err)
	}
	if sess.State() != "picked" || sess.World()["title"] != "Broken list" {
		t.Fatalf("state %s, title %v", sess.State(), sess.World()["title"])
	}
	if _, err := sess.Turn(ctx, "close", nil, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "issues/bugs/B-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "---\ntitle: Broken list\nstatus: resolved\n---\nThe list disappears.\n\n## Comment 2026-06-01T09:00:00Z by kitsoki\n\nClosed by the run.\n"
	if string(b) != want {
		t.Errorf("ticket file:\n%s\nwant:\n%s", b, want)
	}

	sess = open("missing").Session()
	if _, err := sess.Turn(ctx, "pick", map[string]any{"id": "B-9"}, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := sess.World()["failed"].(string); sess.State() != "missing" || !strings.Contains(got, `ticket "B-9" not found: there is no issues/bugs/B-9.md`) {
		t.Errorf("state %s, last_error %q", sess.State(), got)
	}
}
