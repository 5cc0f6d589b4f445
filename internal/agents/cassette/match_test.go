package cassette

import (
	"testing"
)

// TestMatchRules checks every matching rule of cassettes-and-flows.md §2
// with one episode and one call each.
func TestMatchRules(t *testing.T) {
	tests := []struct {
		name      string
		match     string // the episode's match map, YAML flow style
		phaseFrom string
		handler   string
		state     string
		args      map[string]any
		want      bool
	}{
		{"handler equal", `{handler: host.git}`, "", "host.git", "s", nil, true},
		{"handler differs", `{handler: host.git}`, "", "host.gh", "s", nil, false},
		{"no match keys matches anything", `{}`, "", "host.x", "s", map[string]any{"a": 1}, true},
		{"phase is the first dot segment", `{phase: review}`, "", "h", "review.audit.deep", nil, true},
		{"phase differs", `{phase: review}`, "", "h", "intake", nil, false},
		{"phase_from capture", `{phase: audit}`, `^review\.(\w+)`, "h", "review.audit", nil, true},
		{"phase_from no match is empty", `{phase: ""}`, `^review\.(\w+)`, "h", "intake", nil, true},
		{"phase_from no match is not the segment", `{phase: intake}`, `^review\.(\w+)`, "h", "intake", nil, false},
		{"schema_name is the basename", `{schema_name: audit_verdict.json}`, "", "h", "s", map[string]any{"schema": "schemas/audit_verdict.json"}, true},
		{"schema_name differs", `{schema_name: other.json}`, "", "h", "s", map[string]any{"schema": "schemas/audit_verdict.json"}, false},
		{"schema_name absent matches null only", `{schema_name: null}`, "", "h", "s", nil, true},
		{"call is args.call", `{call: audit}`, "", "h", "s", map[string]any{"call": "audit"}, true},
		{"call differs", `{call: audit}`, "", "h", "s", map[string]any{"call": "other"}, false},
		{"other key is args[key]", `{op: open_pr}`, "", "h", "s", map[string]any{"op": "open_pr"}, true},
		{"absent arg does not match a value", `{op: open_pr}`, "", "h", "s", nil, false},
		{"absent arg matches null", `{op: null}`, "", "h", "s", nil, true},
		{"null arg matches null", `{op: null}`, "", "h", "s", map[string]any{"op": nil}, true},
		{"present arg does not match null", `{op: null}`, "", "h", "s", map[string]any{"op": "x"}, false},
		{"1 equals 1.0", `{n: 1}`, "", "h", "s", map[string]any{"n": 1.0}, true},
		{"1 equals int64 1", `{n: 1}`, "", "h", "s", map[string]any{"n": int64(1)}, true},
		{"1 does not equal \"1\"", `{n: 1}`, "", "h", "s", map[string]any{"n": "1"}, false},
		{"maps by JSON encoding", `{args: {claim: dinner, amount: 120}}`, "", "h", "s",
			map[string]any{"args": map[string]any{"amount": int64(120), "claim": "dinner"}}, true},
		{"maps differ", `{args: {claim: dinner}}`, "", "h", "s", map[string]any{"args": map[string]any{"claim": "lunch"}}, false},
		{"lists by JSON encoding", `{tags: [a, 1]}`, "", "h", "s", map[string]any{"tags": []any{"a", 1.0}}, true},
		{"bool", `{draft: true}`, "", "h", "s", map[string]any{"draft": true}, true},
		{"every entry must hold", `{handler: h, call: audit, op: x}`, "", "h", "s", map[string]any{"call": "audit", "op": "y"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yml := "kind: host_cassette\n"
			if tt.phaseFrom != "" {
				yml += "phase_from: '" + tt.phaseFrom + "'\n"
			}
			yml += "episodes:\n  - id: e\n    match: " + tt.match + "\n    response: {data: {}}\n"
			c := mustCassette(t, yml)
			_, got := c.Pick(NewKey(tt.handler, c.Phase(tt.state), tt.args, nil))
			if got != tt.want {
				t.Errorf("matched = %v, want %v", got, tt.want)
			}
		})
	}
}

// Episodes are tried top-down, played ones are skipped, and a reusable
// episode (replay: any) plays again with match_idx counting its plays.
func TestMatchOrderAndMatchIdx(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: first, match: {handler: h}, response: {data: {n: 1}}}
  - {id: second, match: {handler: h}, response: {data: {n: 2}}}
  - {id: loop, match: {handler: h}, replay: any, response: {data: {n: 3}}}
  - {id: never, match: {handler: h}, response: {data: {n: 4}}}
`)
	type play struct {
		id  string
		idx int
	}
	var got []play
	for range 5 {
		p, ok := c.Pick(NewKey("h", "s", nil, nil))
		if !ok {
			t.Fatal("miss")
		}
		got = append(got, play{p.Episode.ID, p.Index})
	}
	want := []play{{"first", 0}, {"second", 0}, {"loop", 0}, {"loop", 1}, {"loop", 2}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("plays = %v, want %v", got, want)
		}
	}
	if rest := c.Remaining(); len(rest) != 1 || rest[0] != "never" {
		t.Errorf("Remaining = %v, want [never]", rest)
	}
}

// A miss names the handler and args, lists the available episodes and
// explains the nearest ones.
func TestMissMessage(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: audit_ok, match: {handler: host.agent.decide, call: audit, phase: reviewing}, response: {data: {}}}
  - {id: fetch, match: {handler: host.http, url: "https://x"}, response: {data: {}}}
  - {id: once, match: {handler: host.agent.decide, call: audit2}, response: {data: {}}}
`)
	if _, ok := c.Pick(NewKey("host.agent.decide", "reviewing", map[string]any{"call": "audit2"}, nil)); !ok {
		t.Fatal("setup: once should match")
	}
	k := NewKey("host.agent.decide", "intake", map[string]any{"call": "audit2", "n": 1}, nil)
	if _, ok := c.Pick(k); ok {
		t.Fatal("want a miss")
	}
	got := c.missText(k)
	want := `cassette miss: no episode matched handler="host.agent.decide" args={"call":"audit2","n":1}; available episodes: [audit_ok fetch]` +
		`; nearest: "once" matches but already played (write replay: any to reuse it)` +
		`; "audit_ok" differs on call (episode wants "audit", call has "audit2"), phase (episode wants "reviewing", call has "intake")` +
		`; "fetch" differs on handler (episode wants "host.http", call has "host.agent.decide"), url (episode wants "https://x", call has nothing)`
	if got != want {
		t.Errorf("miss text:\n got %s\nwant %s", got, want)
	}
}

func TestMissMessageEmptyCassette(t *testing.T) {
	c := mustCassette(t, "kind: host_cassette\nepisodes: []\n")
	k := NewKey("agent.x", "s", map[string]any{"verb": "ask"}, nil)
	want := `cassette miss: no episode matched handler="agent.x" args={"verb":"ask"}; available episodes: []`
	if got := c.missText(k); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// The request hash is computed only when an episode carries one to check,
// and then once per key.
func TestRequestHashIsLazy(t *testing.T) {
	c := &Cassette{Episodes: []*Episode{{ID: "a", Match: map[string]any{"handler": "h"}}}}
	c.plays = make([]int, len(c.Episodes))
	calls := 0
	hash := func() string { calls++; return "0123456789abcdef" }
	if _, ok := c.Pick(NewKey("h", "s", nil, hash)); !ok || calls != 0 {
		t.Fatalf("picked %v, hash computed %d times, want 0", ok, calls)
	}
	c.Episodes = append(c.Episodes, &Episode{ID: "b", Match: map[string]any{"handler": "h"}, RequestHash: "0123456789abcdef"},
		&Episode{ID: "c", Match: map[string]any{"handler": "h"}, RequestHash: "fedcba9876543210", Reusable: true})
	c.plays = make([]int, len(c.Episodes))
	c.plays[0] = 1
	k := NewKey("h", "s", nil, hash)
	if p, ok := c.Pick(k); !ok || p.Episode.ID != "b" || calls != 1 {
		t.Fatalf("picked %v %v, hash computed %d times, want 1", ok, p.Episode, calls)
	}
	if p, ok := c.Pick(k); !ok || p.Episode.ID != "c" || calls != 1 || len(c.warnings) != 1 {
		t.Fatalf("picked %v %v, hash computed %d times (want 1 in all), warnings %v", ok, p.Episode, calls, c.warnings)
	}
}
