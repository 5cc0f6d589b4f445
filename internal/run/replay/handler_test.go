package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// hostStory invokes a non-agent host (host.git.open_pr) and binds its data.
const hostStory = `app: {id: host-test}
world:
  pr: {type: object, default: {}}
intents:
  open: {slots: {title: {type: string, required: true}}}
root: idle
states:
  idle:
    on: {open: [{target: opening}]}
  opening:
    on_enter:
      - invoke: host.git.open_pr
        id: pr
        with: {title: "{{ slots.title }}", draft: false}
        bind: {pr: url}
        on_error: failed
    on: {open: [{target: opening}]}
  failed: {on: {open: [{target: opening}]}}
`

func hostRig(t *testing.T, c *Cassette) *rig {
	return newRig(t, map[string]string{"app.yaml": hostStory}, nil,
		func(r *rig) { c.ReplayHandlers(r.h, r.sink, r.st.App.ID) })
}

// An episode for host.git serves host.git.open_pr (prefix fallback), and
// match.handler is compared with the registered name, host.git.
func TestHandlerPrefixFallbackAndResults(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: by_name, match: {handler: host.git.close_pr}, response: {data: {url: never}}}
  - {id: ok, match: {handler: host.git, call: pr, title: Fix, draft: false}, response: {data: {url: "https://pr/1"}}}
  - {id: domain, match: {handler: host.git, title: Dup}, response: {data: {url: "https://pr/0"}, error: already exists}}
  - {id: infra, match: {handler: host.git, title: Down}, response: {infra_error: github unreachable}}
`)
	r := hostRig(t, c)
	out := r.do("open", map[string]any{"title": "Fix"})
	if out.State != "opening" || r.sess.World()["pr"] != "https://pr/1" {
		t.Fatalf("state %q pr %v", out.State, r.sess.World()["pr"])
	}
	out = r.do("open", map[string]any{"title": "Dup"})
	w := r.sess.World()
	if out.State != "failed" || w["pr"] != "https://pr/1" || w["last_error"] != "already exists" {
		t.Errorf("domain error: state %q pr %v last_error %v (a failed call binds nothing, even with data)", out.State, w["pr"], w["last_error"])
	}
	out = r.do("open", map[string]any{"title": "Down"})
	w = r.sess.World()
	if out.State != "failed" || w["pr"] != "https://pr/1" || w["last_error"] != "github unreachable" {
		t.Errorf("infra error: state %q pr %v last_error %v", out.State, w["pr"], w["last_error"])
	}
	out = r.do("open", map[string]any{"title": "Other"})
	le, _ := r.sess.World()["last_error"].(string)
	want := `cassette miss: no episode matched handler="host.git" args={"call":"pr","draft":false,"title":"Other"}; available episodes: [by_name]`
	if out.State != "failed" || len(le) < len(want) || le[:len(want)] != want {
		t.Errorf("miss: state %q last_error\n got %s\nwant %s...", out.State, le, want)
	}
	if m := c.TakeMisses(); len(m) != 1 || m[0] != le {
		t.Errorf("misses = %q", m)
	}
	if rest := c.Remaining(); len(rest) != 1 || rest[0] != "by_name" {
		t.Errorf("remaining = %v", rest)
	}
}

// A host.agent.* episode with an agent: block writes the agent events
// (start, then complete or error) with the cassette call_id, and binds only
// response.data.
func TestHandlerAgentEvents(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
app_id: cassette-app
episodes:
  - id: hi
    match: {handler: host.agent.decide, call: compose}
    response: {data: {submitted: {text: "Hi from data"}}}
    agent: {agent: greeter, model: m, duration_ms: 40, prompt: "Greet.", input: {schema_present: true}, response: "not json", prompt_tokens: 3}
  - id: down
    match: {handler: host.agent.decide}
    response: {error: "agent: plugin_crash: boom", data: {ok: false}}
    agent: {error: "agent: plugin_crash: boom", duration_ms: 5}
`)
	r := cassetteRig(t, c)
	out := r.do("greet", map[string]any{"name": "Ada"})
	if out.View != "Hi from data" {
		t.Fatalf("view %q: the agent block must not change what is bound", out.View)
	}
	r.do("back", nil)
	out = r.do("greet", map[string]any{"name": "Ada"})
	if out.State != "lobby" || r.sess.World()["last_error"] != "agent: plugin_crash: boom" {
		t.Fatalf("state %q last_error %v", out.State, r.sess.World()["last_error"])
	}
	evs := r.events(trace.KindAgentCallStart, trace.KindAgentCallComplete, trace.KindAgentCallError)
	if len(evs) != 4 {
		t.Fatalf("%d agent events", len(evs))
	}
	id0, id1 := trace.CallID("cassette-app", "hi:0"), trace.CallID("cassette-app", "down:0")
	type ev struct {
		Kind, CallID, EpisodeID string
		Payload                 map[string]any
	}
	got := make([]ev, len(evs))
	for i, e := range evs {
		got[i] = ev{e.Kind, e.CallID, e.EpisodeID, e.Payload}
	}
	want := []ev{
		{trace.KindAgentCallStart, id0, "hi", map[string]any{"verb": "decide", "agent": "greeter", "model": "m",
			"prompt": "Greet.", "input": map[string]any{"schema_present": true}}},
		{trace.KindAgentCallComplete, id0, "", map[string]any{"verb": "decide", "agent": "greeter", "model": "m",
			"duration_ms": json.Number("40"), "response": "not json", "meta": map[string]any{"usage": map[string]any{"input_tokens": json.Number("3")}}}},
		{trace.KindAgentCallStart, id1, "down", map[string]any{"verb": "decide"}},
		{trace.KindAgentCallError, id1, "", map[string]any{"verb": "decide", "duration_ms": json.Number("5"), "error": "agent: plugin_crash: boom", "error_kind": "plugin_crash"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("agent events (-want +got):\n%s", d)
	}
}

// A recorded agent error closes the call with the kind the cassette
// replays it with: the recorded kind when the text is an AskError
// rendering, plugin_crash (the text as its detail) otherwise.
func TestHandlerAgentErrorKinds(t *testing.T) {
	tests := []struct {
		recorded, wantErr, wantKind string
	}{
		{"agent: deadline_exceeded: no answer within 5s", "agent: deadline_exceeded: no answer within 5s", "deadline_exceeded"},
		{"agent: schema_invalid", "agent: schema_invalid", "schema_invalid"},
		{"github exploded", "agent: plugin_crash: github exploded", "plugin_crash"},
		{"agent: no_such_kind: x", "agent: plugin_crash: agent: no_such_kind: x", "plugin_crash"},
	}
	for _, tt := range tests {
		t.Run(tt.recorded, func(t *testing.T) {
			c := mustCassette(t, `kind: host_cassette
app_id: cassette-app
episodes:
  - id: down
    match: {handler: host.agent.decide}
    response: {error: "failed", data: {ok: false}}
    agent: {error: "`+tt.recorded+`", duration_ms: 5}
`)
			r := cassetteRig(t, c)
			r.do("greet", map[string]any{"name": "Ada"})
			evs := r.events(trace.KindAgentCallError)
			if len(evs) != 1 {
				t.Fatalf("%d agent.call.error events", len(evs))
			}
			want := map[string]any{"verb": "decide", "duration_ms": json.Number("5"), "error": tt.wantErr, "error_kind": tt.wantKind}
			if d := cmp.Diff(want, evs[0].Payload); d != "" {
				t.Errorf("agent.call.error payload (-want +got):\n%s", d)
			}
		})
	}
}

// With both host.agent.decide episodes and episodes for the invoke's
// agent alias, the alias's own episodes answer (agent role).
func TestHandlerDelegatesToAgentRole(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: generic, match: {handler: host.agent.decide}, response: {data: {submitted: {text: "from host role"}}}}
  - {id: alias, match: {handler: agent.g}, agent: {response: '{"text":"from agent role"}'}}
`)
	r := cassetteRig(t, c)
	if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "from agent role" {
		t.Errorf("view %q", out.View)
	}
	if rest := c.Remaining(); len(rest) != 1 || rest[0] != "generic" {
		t.Errorf("remaining %v", rest)
	}
}

// Without agent-role episodes for the alias, host.agent.* episodes serve
// every call of that verb, alias or not.
func TestHandlerServesAliasCallsWithoutAgentEpisodes(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: generic, match: {handler: host.agent.decide}, response: {data: {submitted: {text: "from host role"}}}}
`)
	r := cassetteRig(t, c)
	if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "from host role" {
		t.Errorf("view %q", out.View)
	}
	var _ host.Handler = c.Handler("x", r.sink, "a", nil)
}
