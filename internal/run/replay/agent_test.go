package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

import ()

func TestCassetteAgentThroughHost(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - id: hi
    match: {handler: agent.g, phase: greeting, verb: decide, schema_name: greeting.json, call: compose}
    replay: any
    agent: {response: '{"text":"Hello"}', model: recorded-model}
`)
	r := cassetteRig(t, c)
	for i := range 3 {
		out := r.do("greet", map[string]any{"name": "Ada"})
		if out.State != "greeting" || out.View != "Hello" || len(out.HostErrors) > 0 {
			t.Fatalf("turn %d: %+v", i+1, out)
		}
		r.do("back", nil)
	}
	starts := r.events(trace.KindAgentCallStart)
	completes := r.events(trace.KindAgentCallComplete)
	if len(starts) != 3 || len(completes) != 3 {
		t.Fatalf("%d starts, %d completes", len(starts), len(completes))
	}
	for i, st := range starts {
		wantID := trace.CallID("greet-test", trace.CassetteCallKey("hi", i)) // no app_id: the story's
		if st.EpisodeID != "hi" || st.MatchIdx != i || st.CallID != wantID || completes[i].CallID != wantID {
			t.Errorf("start %d: episode %q idx %d call %q / %q, want idx %d call %q", i, st.EpisodeID, st.MatchIdx, st.CallID, completes[i].CallID, i, wantID)
		}
		meta, _ := completes[i].Payload["meta"].(map[string]any)
		if meta["call_id"] != wantID || meta["match_idx"] != json.Number(itoaTest(i)) {
			t.Errorf("complete %d meta = %v", i, meta)
		}
	}
	line, _ := json.Marshal(starts[1])
	if !strings.Contains(string(line), `"episode_id":"hi","match_idx":1,`) {
		t.Errorf("start line = %s", line)
	}
}

func itoaTest(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestCassetteAgentValidationAndMiss(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: bad, match: {handler: agent.g, call: compose}, agent: {response: '{"text":""}'}}
`)
	r := cassetteRig(t, c)
	out := r.do("greet", map[string]any{"name": "Ada"})
	if out.State != "lobby" {
		t.Fatalf("state %q, want lobby (on_error)", out.State)
	}
	le, _ := r.sess.World()["last_error"].(string)
	if !strings.Contains(le, "agent: schema_invalid: /text") {
		t.Errorf("last_error = %q", le)
	}
	out = r.do("greet", map[string]any{"name": "Bo"})
	le, _ = r.sess.World()["last_error"].(string)
	if out.State != "lobby" || !strings.Contains(le, `agent: transport_error: cassette agent "agent.g": cassette miss: no episode matched handler="agent.g"`) {
		t.Errorf("state %q last_error %q", out.State, le)
	}
	starts := r.events(trace.KindAgentCallStart)
	if starts[0].EpisodeID != "bad" || starts[1].EpisodeID != "" {
		t.Errorf("episode ids %q %q", starts[0].EpisodeID, starts[1].EpisodeID)
	}
	if want := trace.CallID("greet-test", trace.LiveCallKey(2, "greeting", starts[1].Seq)); starts[1].CallID != want {
		t.Errorf("a miss keeps the live call_id: %q, want %q", starts[1].CallID, want)
	}
}
