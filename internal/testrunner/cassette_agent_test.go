package testrunner

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/trace"
)

func ask(t *testing.T, a agent.Agent, req *agent.AskRequest) (*agent.AskResponse, *agent.AskError) {
	t.Helper()
	resp, err := a.Ask(context.Background(), agent.NewCall(req))
	if err == nil {
		return resp, nil
	}
	ae, ok := agent.AsAskError(err)
	if !ok {
		t.Fatalf("error is not an AskError: %v", err)
	}
	return resp, ae
}

// The agent role answers from the episode: submission, meta, and the error
// mapping of cassettes-and-flows.md §3.
func TestCassetteAgentAnswers(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
app_id: app
episodes:
  - id: json
    match: {handler: agent.x, verb: decide, call: j}
    agent: {model: m1, agent: auditor, duration_ms: 12, prompt_tokens: 5, response_tokens: 7, cost_usd: 0.25, response: ' {"a": 1}'}
  - id: text
    match: {handler: agent.x, call: t}
    agent: {response: "plain words"}
  - id: data
    match: {handler: agent.x, call: d}
    response: {data: {b: 2}}
  - id: none
    match: {handler: agent.x, call: n}
    agent: {verb: ask}
  - id: infra
    match: {handler: agent.x, call: i}
    response: {infra_error: connection reset}
  - id: agent_error
    match: {handler: agent.x, call: ae}
    agent: {error: model overloaded}
  - id: domain_error
    match: {handler: agent.x, call: de}
    response: {error: refused}
  - id: domain_error_with_agent
    match: {handler: agent.x, call: dea}
    response: {error: ignored for agents}
    agent: {response: '{"ok":true}'}
  - id: recorded_kind
    match: {handler: agent.x, call: rk}
    agent: {error: "agent: deadline_exceeded: no answer within the hard deadline of 1s; a late answer is discarded"}
  - id: recorded_bare_kind
    match: {handler: agent.x, call: rb}
    agent: {error: "agent: transport_error"}
`)
	a := NewCassetteAgent(c, "agent.x")
	tests := []struct {
		call     string
		wantSub  string
		wantMeta map[string]any
		wantKind agent.ErrorKind
		wantErr  string
	}{
		{call: "j", wantSub: ` {"a": 1}`, wantMeta: map[string]any{"transport": "cassette", "episode_id": "json", "match_idx": 0,
			"call_id": trace.CallID("app", "json:0"), "model": "m1", "agent": "auditor", "duration_ms": int64(12),
			"usage": map[string]any{"input_tokens": int64(5), "output_tokens": int64(7)}, "cost_usd": 0.25}},
		{call: "t", wantSub: `"plain words"`},
		{call: "d", wantSub: `{"b":2}`},
		{call: "n", wantSub: ``},
		{call: "i", wantKind: agent.KindTransportError, wantErr: "agent: transport_error: connection reset"},
		{call: "ae", wantKind: agent.KindPluginCrash, wantErr: "agent: plugin_crash: model overloaded"},
		{call: "de", wantKind: agent.KindPluginCrash, wantErr: "agent: plugin_crash: refused"},
		{call: "dea", wantSub: `{"ok":true}`},
		{call: "rk", wantKind: agent.KindDeadlineExceeded, wantErr: "agent: deadline_exceeded: no answer within the hard deadline of 1s; a late answer is discarded"},
		{call: "rb", wantKind: agent.KindTransportError, wantErr: "agent: transport_error"},
	}
	for _, tt := range tests {
		t.Run(tt.call, func(t *testing.T) {
			resp, ae := ask(t, a, &agent.AskRequest{Verb: "decide", StatePath: "s", With: map[string]any{"call": tt.call}})
			if tt.wantKind != "" {
				if ae == nil || ae.Kind != tt.wantKind || ae.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %s", ae, tt.wantErr)
				}
				return
			}
			if ae != nil {
				t.Fatal(ae)
			}
			if string(resp.Submission) != tt.wantSub {
				t.Errorf("submission = %q, want %q", resp.Submission, tt.wantSub)
			}
			if tt.wantMeta != nil {
				if d := cmp.Diff(tt.wantMeta, resp.Meta); d != "" {
					t.Errorf("meta (-want +got):\n%s", d)
				}
			}
			if resp.Meta["transport"] != "cassette" || resp.Meta["episode_id"] == nil {
				t.Errorf("meta = %v", resp.Meta)
			}
		})
	}
	t.Run("miss", func(t *testing.T) {
		_, ae := ask(t, a, &agent.AskRequest{Verb: "ask", StatePath: "s", With: map[string]any{"call": "zzz"}})
		want := `agent: transport_error: cassette agent "agent.x": cassette miss: no episode matched handler="agent.x" args={"call":"zzz","verb":"ask"}; available episodes: []`
		if ae == nil || ae.Kind != agent.KindTransportError || len(ae.Error()) < len(want) || ae.Error()[:len(want)] != want {
			t.Fatalf("error = %v\nwant prefix %s", ae, want)
		}
		if m := c.TakeMisses(); len(m) != 1 || m[0] != ae.Detail[len(`cassette agent "agent.x": `):] {
			t.Errorf("misses = %q", m)
		}
		if m := c.TakeMisses(); len(m) != 0 {
			t.Errorf("TakeMisses does not forget: %q", m)
		}
	})
}

// Through the host: agent.call.start carries episode_id and match_idx, the
// call_id derives from the cassette key, and the submission is validated
// and bound like any plugin's.
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
	if !contains2(string(line), `"episode_id":"hi","match_idx":1,`) {
		t.Errorf("start line = %s", line)
	}
}

func itoaTest(i int) string { b, _ := json.Marshal(i); return string(b) }

// A schema-invalid replayed answer is refused by the host like any
// plugin's; a miss fails the call with transport_error and on_error runs.
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
	if !contains2(le, "agent: schema_invalid: /text") {
		t.Errorf("last_error = %q", le)
	}
	out = r.do("greet", map[string]any{"name": "Bo"})
	le, _ = r.sess.World()["last_error"].(string)
	if out.State != "lobby" || !contains2(le, `agent: transport_error: cassette agent "agent.g": cassette miss: no episode matched handler="agent.g"`) {
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

// Delays sleep on the cassette's clock: a fake clock jumps, the test does
// not wait; a delay past the call's deadline fails as deadline_exceeded.
func TestCassetteAgentDelay(t *testing.T) {
	clk := clock.NewFake(FlowEpoch)
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: slow, match: {call: slow}, delay: 3d, agent: {response: '{}'}}
  - {id: late, match: {call: late}, delay: 2s, agent: {response: '{}'}}
`, WithClock(clk))
	a := NewCassetteAgent(c, "agent.x")
	begin := time.Now()
	if _, ae := ask(t, a, &agent.AskRequest{Verb: "ask", With: map[string]any{"call": "slow"}}); ae != nil {
		t.Fatal(ae)
	}
	if got := clk.Now().Sub(FlowEpoch); got != 72*time.Hour {
		t.Errorf("clock advanced %v, want 72h", got)
	}
	if time.Since(begin) > 5*time.Second {
		t.Errorf("a fake-clock delay took real time")
	}
	ctx, cancel := clock.WithTimeout(context.Background(), clk, time.Second) // measured on the cassette's clock
	defer cancel()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask", With: map[string]any{"call": "late"}}))
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindDeadlineExceeded {
		t.Fatalf("error = %v, want deadline_exceeded", err)
	}
	if !contains2(ae.Error(), `episode "late": delay 2s outlasts the call's deadline`) {
		t.Errorf("error = %v", ae)
	}
}

// On the wall clock a delay really waits, and cancellation ends it early.
func TestCassetteAgentRealDelayCancelled(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: slow, delay: 1h, agent: {response: '{}'}}
  - {id: short, delay: 20ms, agent: {response: '{}'}}
`)
	a := NewCassetteAgent(c, "agent.x")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask"}))
	if ae, ok := agent.AsAskError(err); !ok || ae.Kind != agent.KindDeadlineExceeded || !contains2(ae.Error(), "call cancelled") {
		t.Fatalf("error = %v", err)
	}
	if _, ae := ask(t, a, &agent.AskRequest{Verb: "ask"}); ae != nil {
		t.Fatal(ae)
	}
}
