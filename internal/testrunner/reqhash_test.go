package testrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// An episode carries the hash of the request it was recorded for. Replayed
// for another request it still answers, with a warning naming the episode
// and both hashes; under WithStrictRequests it does not match, and the call
// fails with that text. Episodes without a hash replay without the check.
func TestReplayRequestHash(t *testing.T) {
	const (
		adaHash = "4a308fa03afd24fb" // the greet call for Ada, as recorded
		bobHash = "5c5040195fe5e7fe" // the greet call for Bob
	)
	recorded := func(t *testing.T, opts ...LoadOption) *Cassette {
		rec, _ := recordGreet(t)
		c, err := rec.Cassette(append([]LoadOption{WithGetenv(noEnv)}, opts...)...)
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
		c := recorded(t, WithStrictRequests(true))
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
		c := recorded(t, WithStrictRequests(true))
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

// A request_hash that is not one is a load error naming the line.
func TestRequestHashLoadError(t *testing.T) {
	_, err := ParseCassette([]byte("kind: host_cassette\nepisodes:\n  - id: a\n    match: {handler: host.x}\n    request_hash: abc\n    response: {data: {}}\n"),
		"c.yaml", WithGetenv(noEnv))
	want := `cassette: "c.yaml": line 5: episode "a": request_hash "abc" is not a request hash (16 lowercase hex characters, as kitsoki run --record writes it); delete the key to replay without the check`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// In a flow, a request-hash mismatch is a warning line under the flow's
// status; with WithCassetteStrict it is the turn's failure.
func TestFlowRequestHash(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"f.yaml": "test_kind: flow\napp: " + mustAbs(t, shopApp) + "\nhost_cassette: c.yaml\nturns:\n  - intent: {name: add}\n  - intent: {name: pay}\n    expect_world: {receipt: R-1}\n",
		"c.yaml": "kind: host_cassette\nepisodes:\n  - {id: charge, match: {handler: host.pay}, request_hash: 0123456789abcdef, response: {data: {receipt: R-1}}}\n",
	})
	now := hostRequestHash(&host.Call{Namespace: "host.pay.charge", Args: map[string]any{"amount": 1, "call": "charge", "op": "charge"}})
	mismatch := `cassette episode 1 "charge" (host.pay): recorded for a different request (hash 0123456789abcdef ≠ ` + now + `)`
	tests := []struct {
		name   string
		strict bool
		want   string
	}{
		{"warn", false, "PASS  f.yaml\n  warning: turn 2: " + mismatch + "\n"},
		{"strict", true, "FAIL  f.yaml\n  FAIL  turn 2 → cart\n  ✗ expect_world[\"receipt\"]: got \"\" (string), want \"R-1\" (string)\n" +
			"  ✗ expect_world: world differs (-want +got):\n      map[string]any{\n    - \t\"receipt\": string(\"R-1\"),\n    + \t\"receipt\": string(\"\"),\n      }\n" +
			"  ✗ " + mismatch + "; refused under --cassette-strict\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runFile(t, filepath.Join(dir, "f.yaml"), WithCassetteStrict(tt.strict))
			got := strings.ReplaceAll(report(res, false), "\u00a0", " ")
			if got != tt.want {
				t.Errorf("report:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
