package cassette

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

// An agent block's transcript reads as written: string events byte for
// byte (key order, number literals), mapping events as compact JSON in
// their written order, timings as offsets; encoding the cassette and
// reading it again gives the same transcript.
func TestTranscriptParseAndRoundTrip(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - id: a
    agent:
      verb: task
      response: done
      transcript:
        format: claude-stream-json
        events:
          - '{"type":"result","z":1,"a":1.50}'
          - {_kitsoki: validator_reject, reason: "amount: expected number"}
          - "{\"type\":\"user\",\"text\":\"it's \\u00e9\"}"
        timings: [0, 15]
`)
	want := &Transcript{Format: "claude-stream-json", Events: []string{
		`{"type":"result","z":1,"a":1.50}`,
		`{"_kitsoki":"validator_reject","reason":"amount: expected number"}`,
		`{"type":"user","text":"it's \u00e9"}`,
	}, Timings: []int64{0, 15}}
	if d := cmp.Diff(want, c.Episodes[0].Agent.Transcript); d != "" {
		t.Fatalf("transcript (-want +got):\n%s", d)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again := mustCassette(t, string(b))
	if d := cmp.Diff(want, again.Episodes[0].Agent.Transcript); d != "" {
		t.Errorf("after Encode and Parse (-want +got):\n%s\n%s", d, b)
	}
}

// The agent role hands the episode's transcript to the host with the
// answer, and with a recorded error; a recorded exchange keeps the
// transcript the transport gave.
func TestTranscriptAgentRoleAndRecord(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
episodes:
  - id: ok
    match: {handler: agent.x}
    agent: {response: '{"a":1}', transcript: {format: f, events: ['{"n":1}'], timings: [3]}}
  - id: bad
    match: {handler: agent.x}
    agent: {error: "agent: schema_invalid: no", transcript: {format: f, events: ['{"n":2}']}}
`)
	a := NewAgent(c, "agent.x")
	call := func() *agent.Call {
		return &agent.Call{Request: &agent.AskRequest{Verb: "ask", StatePath: "s", CallID: "c1"}}
	}
	resp, err := a.Ask(context.Background(), call())
	if err != nil {
		t.Fatal(err)
	}
	want := &plugin.Transcript{Format: "f", Events: []json.RawMessage{json.RawMessage(`{"n":1}`)}, Timings: []int64{3}}
	if d := cmp.Diff(want, resp.Transcript); d != "" {
		t.Errorf("answer's transcript (-want +got):\n%s", d)
	}
	_, err = a.Ask(context.Background(), call())
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Transcript == nil || string(ae.Transcript.Events[0]) != `{"n":2}` {
		t.Errorf("error %v: want an AskError carrying the recorded transcript", err)
	}

	ep := AgentEpisode(context.Background(), "agent.x", "s", call(), resp, nil)
	if d := cmp.Diff(&Transcript{Format: "f", Events: []string{`{"n":1}`}, Timings: []int64{3}}, ep.Agent.Transcript); d != "" {
		t.Errorf("recorded transcript (-want +got):\n%s", d)
	}
	ep = AgentEpisode(context.Background(), "agent.x", "s", call(), nil, ae)
	if ep.Agent.Transcript == nil || ep.Agent.Transcript.Events[0] != `{"n":2}` {
		t.Errorf("a recorded failure keeps its transcript: %+v", ep.Agent.Transcript)
	}
}
