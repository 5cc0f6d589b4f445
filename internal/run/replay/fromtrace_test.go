package replay

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A real run's trace turns into a cassette that replays the run: same
// views, same world, same bound submissions, and the host calls match on
// their arguments.
func TestFromTraceReplaysTheRun(t *testing.T) {
	live := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		r.reg.Register("agent.g", liveGreeter(nil))
		return nil
	}, nil)
	var views []string
	for _, name := range greetRun {
		views = append(views, live.do("greet", map[string]any{"name": name}).View)
		live.do("back", nil)
	}
	evs, err := trace.Read(bytes.NewReader(live.sink.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromTrace(evs, "greet-test")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Episodes) != 4 {
		t.Fatalf("%d episodes, want 4", len(c.Episodes))
	}
	ep := c.Episodes[0]
	if ep.ID != "recorded_host.agent.decide_greeting" || ep.Match["handler"] != "host.agent.decide" || ep.Match["phase"] != "lobby" {
		t.Errorf("episode 0 = %+v", ep)
	}
	ab := ep.Agent
	if ab == nil || ab.Verb != "decide" || ab.Agent != "greeter" || ab.Model != "live-1" || ab.Prompt != "Greet Ada." ||
		ab.Response != `{"text":"Hello Ada"}` || ab.PromptTokens != 11 || ab.ResponseTokens != 4 || ab.CostUSD != 0.002 {
		t.Errorf("agent block = %+v", ab)
	}
	if e := c.Episodes[2]; e.Response.Error != "agent: transport_error: mcp_http agent: http 503: busy" || e.Agent.Error != e.Response.Error {
		t.Errorf("error episode = %+v / %+v", e.Response, e.Agent)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Strict: the request hashes taken from the trace are the replay's.
	back, err := parseCassette(b, "x.yaml", cassette.WithGetenv(testkit.NoEnv), cassette.WithStrictRequests(true))
	if err != nil {
		t.Fatalf("the cassette does not load back: %v\n%s", err, b)
	}
	replay := cassetteRig(t, back)
	var rviews []string
	for _, name := range greetRun {
		rviews = append(rviews, replay.do("greet", map[string]any{"name": name}).View)
		replay.do("back", nil)
	}
	if d := cmp.Diff(views, rviews); d != "" {
		t.Errorf("views (-live +replay):\n%s", d)
	}
	for _, ep := range back.Episodes {
		if !cassette.IsRequestHash(ep.RequestHash) {
			t.Errorf("episode %s: request_hash %q", ep.ID, ep.RequestHash)
		}
	}
	if w, m := back.TakeWarnings(), back.TakeMisses(); len(w)+len(m) != 0 {
		t.Errorf("warnings %q, misses %q", w, m)
	}
	lw, _ := cassette.NormalizeJSON(live.sess.World())
	rw, _ := cassette.NormalizeJSON(replay.sess.World())
	if d := cmp.Diff(lw, rw); d != "" {
		t.Errorf("world (-live +replay):\n%s", d)
	}
}

func TestFromTraceHostCalls(t *testing.T) {
	live := newRig(t, map[string]string{"app.yaml": hostStory}, nil, func(r *rig) {
		r.h.Register("host.git.open_pr", host.HandlerFunc(func(_ context.Context, call *host.Call) (*host.Result, error) {
			return &host.Result{Data: map[string]any{"url": fmt.Sprint("https://pr/", call.Args["title"])}}, nil
		}))
	})
	live.do("open", map[string]any{"title": "A"}) // from idle
	live.do("open", map[string]any{"title": "B"}) // from opening
	live.do("open", map[string]any{"title": "A"}) // from opening
	evs, err := trace.Read(bytes.NewReader(live.sink.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromTrace(evs, "", cassette.WithStrictRequests(true)) // the hashes taken from the trace are the replay's
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Encode()
	for _, want := range []string{"title: A\n", "title: B\n", "url: https://pr/B\n", "call: pr\n", "draft: false\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("cassette lacks %q:\n%s", want, b)
		}
	}
	// The phase is the state each turn began in (idle, then opening);
	// within a phase the args decide, not the order: the second A skips B.
	replay := hostRig(t, c)
	replay.do("open", map[string]any{"title": "A"})
	replay.do("open", map[string]any{"title": "A"})
	if replay.sess.World()["pr"] != "https://pr/A" {
		t.Errorf("pr = %v", replay.sess.World()["pr"])
	}
	if got, want := c.Remaining(), []string{"recorded_host.git.open_pr_opening_2"}; !slices.Equal(got, want) {
		t.Errorf("unplayed %v, want %v", got, want)
	}
	if w, m := c.TakeWarnings(), c.TakeMisses(); len(w)+len(m) != 0 {
		t.Errorf("warnings %q, misses %q", w, m)
	}
}

// Kitsoki writes harness.dispatched and agent.call.* before the turn's
// batch, so harness.returned comes later; pairing is by namespace in order.
func TestFromTraceKitsokiOrder(t *testing.T) {
	evs := []trace.Event{
		{Turn: 1, Seq: 0, Kind: trace.KindHarnessDispatched, StatePath: "review", Payload: map[string]any{"namespace": "host.agent.decide", "args": map[string]any{"call": "a"}}},
		{Turn: 1, Seq: 1, Kind: trace.KindAgentCallStart, Payload: map[string]any{"verb": "decide", "agent": "auditor"}},
		{Turn: 1, Seq: 2, Kind: trace.KindAgentCallComplete, Payload: map[string]any{"duration_ms": 9, "response": map[string]any{"submission": map[string]any{"ok": true}}}},
		{Turn: 1, Seq: 3, Kind: trace.KindHarnessDispatched, StatePath: "review", Payload: map[string]any{"namespace": "host.kv", "args": map[string]any{"k": "x"}}},
		{Turn: 1, Seq: 4, Kind: trace.KindTurnInput, Payload: map[string]any{}},
		{Turn: 1, Seq: 5, Kind: trace.KindHarnessReturned, Payload: map[string]any{"namespace": "host.agent.decide", "data": map[string]any{"submitted": map[string]any{"ok": true}}}},
		{Turn: 1, Seq: 6, Kind: trace.KindHarnessReturned, Payload: map[string]any{"namespace": "host.kv", "error": "no such key"}},
	}
	c, err := FromTrace(evs, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Episodes) != 2 || c.Episodes[0].Agent.Response != `{"ok":true}` || c.Episodes[0].Agent.DurationMS != 9 ||
		c.Episodes[1].Response.Error != "no such key" || c.Episodes[1].Match["k"] != "x" {
		t.Errorf("episodes = %+v, %+v", c.Episodes[0], c.Episodes[1])
	}
	if _, err := FromTrace([]trace.Event{{Kind: trace.KindHarnessReturned, Payload: map[string]any{"namespace": "h"}}}, ""); err == nil ||
		!strings.Contains(err.Error(), `harness.returned for "h" (turn 0, seq 0) without a harness.dispatched before it`) {
		t.Errorf("unpaired returned: %v", err)
	}
}
