package cassette

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
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
	a := NewAgent(c, "agent.x")
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
// A schema-invalid replayed answer is refused by the host like any
// plugin's; a miss fails the call with transport_error and on_error runs.
// Delays sleep on the cassette's clock: a fake clock jumps, the test does
// not wait; a delay past the call's deadline fails as deadline_exceeded.
func TestCassetteAgentDelay(t *testing.T) {
	clk := clock.NewFake(epoch)
	c := mustCassette(t, `kind: host_cassette
episodes:
  - {id: slow, match: {call: slow}, delay: 3d, agent: {response: '{}'}}
  - {id: late, match: {call: late}, delay: 2s, agent: {response: '{}'}}
`, WithClock(clk))
	a := NewAgent(c, "agent.x")
	begin := time.Now()
	if _, ae := ask(t, a, &agent.AskRequest{Verb: "ask", With: map[string]any{"call": "slow"}}); ae != nil {
		t.Fatal(ae)
	}
	if got := clk.Now().Sub(epoch); got != 72*time.Hour {
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
	if !strings.Contains(ae.Error(), `episode "late": delay 2s outlasts the call's deadline`) {
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
	a := NewAgent(c, "agent.x")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask"}))
	if ae, ok := agent.AsAskError(err); !ok || ae.Kind != agent.KindDeadlineExceeded || !strings.Contains(ae.Error(), "call cancelled") {
		t.Fatalf("error = %v", err)
	}
	if _, ae := ask(t, a, &agent.AskRequest{Verb: "ask"}); ae != nil {
		t.Fatal(ae)
	}
}

// TestCassetteAgentAnswersInline: a call is asked inline only when an
// episode without a delay has been reserved for it (SelectEpisode) on a
// cassette that records nothing; the answer it then gives is the one the
// episode holds.
func TestCassetteAgentAnswersInline(t *testing.T) {
	const eps = `episodes:
  - {id: quick, match: {call: quick}, agent: {response: '{"n": 1}'}}
  - {id: slow, match: {call: slow}, delay: 2s, agent: {response: '{}'}}
`
	live := agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		return &agent.AskResponse{Submission: []byte(`{}`)}, nil
	})
	tests := []struct {
		name    string
		mode    string // record_mode
		live    bool   // the agent has a live agent for misses
		call    string
		reserve bool // SelectEpisode ran first
		want    bool
	}{
		{name: "reserved, no delay", call: "quick", reserve: true, want: true},
		{name: "not reserved", call: "quick"},
		{name: "reserved with a delay", call: "slow", reserve: true},
		{name: "a miss", call: "other", reserve: true},
		{name: "new_episodes without a live agent", mode: "new_episodes", call: "quick", reserve: true, want: true},
		{name: "new_episodes with a live agent", mode: "new_episodes", live: true, call: "quick", reserve: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yml := "kind: host_cassette\n"
			if tt.mode != "" {
				yml += "record_mode: " + tt.mode + "\n"
			}
			c := mustCassette(t, yml+eps, WithClock(clock.NewFake(epoch)))
			var l agent.Agent
			if tt.live {
				l = live
			}
			a := c.Agent("agent.x", l)
			call := agent.NewCall(&agent.AskRequest{Verb: "ask", With: map[string]any{"call": tt.call}})
			if tt.reserve {
				a.(agent.EpisodeSelector).SelectEpisode(context.Background(), call)
			}
			if got := a.(agent.Inline).AnswersInline(call); got != tt.want {
				t.Errorf("AnswersInline = %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			resp, err := a.Ask(context.Background(), call)
			if err != nil || string(resp.Submission) != `{"n": 1}` {
				t.Errorf("Ask = %v, %v; want the episode's answer", resp, err)
			}
		})
	}
}
