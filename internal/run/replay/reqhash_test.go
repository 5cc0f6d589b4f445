package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

import ()

func TestReplayRequestHash(t *testing.T) {
	const (
		adaHash = "4a308fa03afd24fb" // the greet call for Ada, as recorded
		bobHash = "5c5040195fe5e7fe" // the greet call for Bob
	)
	recorded := func(t *testing.T, opts ...cassette.LoadOption) *Cassette {
		rec, _ := recordGreet(t)
		c, err := rec.Cassette(append([]cassette.LoadOption{cassette.WithGetenv(testkit.NoEnv)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("documented formula", func(t *testing.T) {
		doc := `{"prompt":"Greet Bob.",` +
			`"schema":{"additionalProperties":false,"properties":{"text":{"minLength":1,"type":"string"}},"required":["text"],"type":"object"},` +
			`"verb":"decide",` +
			`"with":{"agent":"greeter","call":"compose","name":"Bob","prompt":"Greet Bob.","schema":"schemas/greeting.json"}}`
		sum := sha256.Sum256([]byte(doc))
		if h := hex.EncodeToString(sum[:])[:16]; h != bobHash {
			t.Errorf("SHA-256 of the canonical request = %s, want %s", h, bobHash)
		}
	})
	t.Run("same request", func(t *testing.T) {
		c := recorded(t)
		runGreet(t, cassetteRig(t, c))
		if w := c.TakeWarnings(); len(w) != 0 {
			t.Errorf("warnings = %q", w)
		}
	})
	t.Run("another request warns", func(t *testing.T) {
		c := recorded(t)
		if h := c.Episodes[0].RequestHash; h != adaHash {
			t.Errorf("episode 1 request_hash = %s, want %s", h, adaHash)
		}
		r := cassetteRig(t, c)
		out := r.do("greet", map[string]any{"name": "Bob"})
		if out.View != "Hello Ada" {
			t.Errorf("view = %q: the episode still answers", out.View)
		}
		want := []string{`cassette episode 1 "recorded_agent.g_greeting" (agent.g): recorded for a different request (hash ` + adaHash + ` ≠ ` + bobHash + `)`}
		if d := cmp.Diff(want, c.TakeWarnings()); d != "" {
			t.Errorf("warnings (-want +got):\n%s", d)
		}
		if w := c.TakeWarnings(); len(w) != 0 {
			t.Errorf("TakeWarnings did not forget: %q", w)
		}
	})
	t.Run("strict refuses", func(t *testing.T) {
		c := recorded(t, cassette.WithStrictRequests(true))
		r := cassetteRig(t, c)
		out := r.do("greet", map[string]any{"name": "Bob"})
		if out.State != "lobby" {
			t.Errorf("state = %q, want the on_error target lobby", out.State)
		}
		msg := `cassette episode 1 "recorded_agent.g_greeting" (agent.g): recorded for a different request (hash ` + adaHash + ` ≠ ` + bobHash + `); refused under --cassette-strict`
		if d := cmp.Diff([]string{msg}, c.TakeMisses()); d != "" {
			t.Errorf("misses (-want +got):\n%s", d)
		}
		evs := r.events(trace.KindAgentCallError)
		if len(evs) != 1 || evs[0].Payload["error"] != `agent: transport_error: cassette agent "agent.g": `+msg {
			t.Errorf("agent.call.error = %v", evs)
		}
		if w := c.TakeWarnings(); len(w) != 0 {
			t.Errorf("warnings = %q", w)
		}
		// The request it was recorded for still replays.
		if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "Hello Ada" {
			t.Errorf("Ada: view = %q", out.View)
		}
	})
	t.Run("no hash, no check", func(t *testing.T) {
		c := recorded(t, cassette.WithStrictRequests(true))
		for _, ep := range c.Episodes {
			ep.RequestHash = ""
		}
		r := cassetteRig(t, c)
		if out := r.do("greet", map[string]any{"name": "Bob"}); out.View != "Hello Ada" {
			t.Errorf("view = %q", out.View)
		}
		if w, m := c.TakeWarnings(), c.TakeMisses(); len(w)+len(m) != 0 {
			t.Errorf("warnings %q, misses %q", w, m)
		}
	})
}
