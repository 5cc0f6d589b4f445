package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const templatedNameStory = `
app: {id: names}
world:
  kind: {type: string, default: "fetch"}
  got: {type: string, default: ""}
intents:
  go: {}
  other: {}
  broken: {}
root: idle
states:
  idle:
    on:
      go:
        - target: .
          effects:
            - invoke: "host.{{ world.kind }}"
              with: {what: "{{ world.kind }}"}
              bind: {got: said}
      other:
        - target: .
          effects:
            - set: {kind: "store"}
            - invoke: "host.{{ world.kind }}"
              bind: {got: said}
      broken:
        - target: .
          effects:
            - set: {kind: "nobody"}
            - invoke: "host.{{ world.kind }}"
              on_error: failed
  failed:
    view: "failed: {{ world.last_error }}"
`

// A templated invoke name is rendered against the world when the call is
// queued, and the rendered handler is called: its namespace is the one the
// trace shows. A name that renders to a handler nobody provides fails the
// call (on_error catches it), naming the template and what it rendered.
func TestTemplatedInvokeNameIsRendered(t *testing.T) {
	r := newRig(t, files{"app.yaml": templatedNameStory})
	var calls []string
	for _, name := range []string{"host.fetch", "host.store"} {
		r.host.Register(name, host.HandlerFunc(func(_ context.Context, c *host.Call) (*host.Result, error) {
			calls = append(calls, c.Namespace)
			return &host.Result{Data: map[string]any{"said": name}}, nil
		}))
	}
	r.do("go")
	if got := r.sess.World()["got"]; got != "host.fetch" {
		t.Errorf("world.got = %v, want host.fetch", got)
	}
	r.do("other")
	if got := r.sess.World()["got"]; got != "host.store" {
		t.Errorf("world.got = %v, want host.store", got)
	}
	if d := cmp.Diff([]string{"host.fetch", "host.store"}, calls); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	var namespaces []string
	for _, ev := range r.events(trace.KindHarnessDispatched) {
		ns, _ := ev.Payload["namespace"].(string)
		namespaces = append(namespaces, ns)
	}
	if len(namespaces) == 0 || namespaces[0] != "host.fetch" {
		t.Errorf("the trace names %v, want the rendered handler", namespaces)
	}
	out := r.do("broken")
	if out.State != "failed" {
		t.Fatalf("state %q, want failed", out.State)
	}
	msg, _ := r.sess.World()["last_error"].(string)
	for _, want := range []string{`invoke "host.{{ world.kind }}" rendered "host.nobody"`, `no handler for invoke "host.nobody"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("last_error %q lacks %q", msg, want)
		}
	}
}
