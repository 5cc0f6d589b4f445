package orchestrator

import (
	"context"
	"maps"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const lendStory = `
app: {id: lend}
hosts: [host.look, host.fetch]
world:
  n: {type: int, default: 0}
  got: {type: string, default: ""}
intents:
  go: {}
  fail: {}
root: idle
states:
  idle:
    on:
      go:
        - target: .
          effects:
            - invoke: host.look
            - invoke: host.look
            - invoke: host.fetch
              bind: {got: said}
            - increment: {n: 1}
      fail:
        - target: .
          effects:
            - invoke: host.fetch
              with: {fail: true}
              on_error: idle
`

// The world a host call is handed is not copied, and never changes after:
// calls with no write between them get the same map, and the session's
// next write (a bind, an increment, an error's last_error) goes to a copy.
func TestHostCallsShareTheWorldUntilAWrite(t *testing.T) {
	r := newRig(t, files{"app.yaml": lendStory})
	var seen []map[string]any
	var kept []map[string]any // what each call saw, copied while it ran
	record := func(c *host.Call) {
		seen = append(seen, c.World)
		kept = append(kept, maps.Clone(c.World))
	}
	r.host.Register("host.look", host.HandlerFunc(func(_ context.Context, c *host.Call) (*host.Result, error) {
		record(c)
		return &host.Result{Data: map[string]any{}}, nil
	}))
	r.host.Register("host.fetch", host.HandlerFunc(func(_ context.Context, c *host.Call) (*host.Result, error) {
		record(c)
		if c.Args["fail"] == true {
			return &host.Result{Err: errFetch}, nil
		}
		return &host.Result{Data: map[string]any{"said": "hello"}}, nil
	}))
	r.do("go")
	r.do("go")
	r.do("fail")
	if len(seen) != 7 {
		t.Fatalf("%d calls, want 7", len(seen))
	}
	same := func(a, b map[string]any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	// Turn 1: look, look, fetch with no write between them share a map.
	if !same(seen[0], seen[1]) || !same(seen[1], seen[2]) {
		t.Errorf("calls with no write between them were handed copies")
	}
	// Turn 2's calls come after the bind and the increment: a new map.
	if same(seen[2], seen[3]) {
		t.Errorf("a call after a write got the map an earlier call holds")
	}
	for i := range seen {
		if d := cmp.Diff(kept[i], seen[i]); d != "" {
			t.Errorf("call %d: the world it was handed changed after it returned (-then +now):\n%s", i, d)
		}
	}
	if got := kept[3]["got"]; got != "hello" {
		t.Errorf("turn 2 saw got = %v, want turn 1's bind", got)
	}
	w := r.sess.World()
	if w["n"] != int64(2) {
		t.Errorf("world.n = %v (%T), want 2", w["n"], w["n"])
	}
	if w["last_error"] != "fetch failed" || kept[6]["last_error"] == "fetch failed" {
		t.Errorf("last_error: world %v, the failing call saw %v; want it written after the call only", w["last_error"], kept[6]["last_error"])
	}
}

var errFetch = fetchError("fetch failed")

type fetchError string

func (e fetchError) Error() string { return string(e) }
