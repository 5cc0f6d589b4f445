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

// A call whose handler kept nothing of the world (Result.KeptNoWorld, a
// fixture's stub or a cassette's episode) gives the map back: the next
// write goes to it in place. The map stays lent when any call handed it
// kept it, and what such a call holds never changes.
func TestHostCallsGiveBackAWorldTheyDidNotKeep(t *testing.T) {
	tests := []struct {
		name                  string
		lookKeeps, fetchKeeps bool // the handler says it may keep the world (no KeptNoWorld)
		wantCopy              bool // turn 2's calls get another map than turn 1's
	}{
		{name: "no call kept it", wantCopy: false},
		{name: "the last call kept it", fetchKeeps: true, wantCopy: true},
		{name: "an earlier call kept it", lookKeeps: true, wantCopy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": lendStory})
			var seen, kept []map[string]any
			var keptNone []bool
			handler := func(keptNoWorld bool, data map[string]any) host.Handler {
				return host.HandlerFunc(func(_ context.Context, c *host.Call) (*host.Result, error) {
					seen, kept, keptNone = append(seen, c.World), append(kept, maps.Clone(c.World)), append(keptNone, keptNoWorld)
					return &host.Result{Data: data, KeptNoWorld: keptNoWorld}, nil
				})
			}
			r.host.Register("host.look", handler(!tt.lookKeeps, map[string]any{}))
			r.host.Register("host.fetch", handler(!tt.fetchKeeps, map[string]any{"said": "hello"}))
			r.do("go")
			r.do("go")
			if len(seen) != 6 {
				t.Fatalf("%d calls, want 6", len(seen))
			}
			same := reflect.ValueOf(seen[2]).Pointer() == reflect.ValueOf(seen[3]).Pointer()
			if same == tt.wantCopy {
				t.Errorf("turn 2's first call got the map turn 1's last call got: %v, want %v", same, !tt.wantCopy)
			}
			for i := range seen {
				if keptNone[i] {
					continue
				}
				if d := cmp.Diff(kept[i], seen[i]); d != "" {
					t.Errorf("call %d kept the world, and it changed after the call returned (-then +now):\n%s", i, d)
				}
			}
			w := r.sess.World()
			if w["n"] != int64(2) || w["got"] != "hello" {
				t.Errorf("world n = %v, got = %v; want 2 and hello", w["n"], w["got"])
			}
		})
	}
}
