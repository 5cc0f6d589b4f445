package host

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// profileHost is a host on testdata/ask whose registry also has the
// profile agent profile.fast (answering with meta cost), recording every
// call either agent gets.
func profileHost(t *testing.T, cost float64, quota *agent.Quota, opts ...Option) (*Host, map[string]*story.Invoke, *trace.MemSink, *[]string) {
	t.Helper()
	st, err := story.Load(filepath.Join("testdata", "ask", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	invs := map[string]*story.Invoke{}
	for _, eff := range st.States["s"].OnEnter {
		invs[eff.Invoke.ID] = eff.Invoke
	}
	var asked []string
	answer := func(who string) agent.Agent {
		return agent.AgentFunc(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
			asked = append(asked, who+" model="+c.Model+" effort="+c.Effort+" profile="+c.Profile+" alias="+c.Alias)
			return &agent.AskResponse{Submission: []byte(`{"decision":"approve"}`), Meta: map[string]any{"cost_usd": cost}}, nil
		})
	}
	decls := map[string]agent.Declaration{}
	for k, v := range st.Plugins {
		decls[k] = v
	}
	decls["agent.sub"] = agent.Declaration{Plugin: agent.PluginSubprocess, Command: "/bin/true"}
	decls["profile.fast"] = agent.Declaration{Plugin: agent.PluginOpenAI, Model: "fast-model", Effort: "low", Source: ".kitsoki.yaml profiles.fast", Quota: quota}
	reg := agent.NewRegistry(nil)
	reg.Configure(decls)
	reg.Register("profile.fast", answer("fast"))
	reg.Register("agent.plug", answer("plug"))
	reg.Register("agent.sub", answer("sub"))
	sink := trace.NewMemSink()
	h := New(st, reg, sink, append([]Option{WithBuiltin(answer("builtin"))}, opts...)...)
	t.Cleanup(func() { h.Close() })
	return h, invs, sink, &asked
}

func decide(t *testing.T, h *Host, inv *story.Invoke, with map[string]any) (*Result, error) {
	t.Helper()
	if with == nil {
		with = map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json"}
	}
	return h.Dispatch(context.Background(), &Call{Namespace: "host.agent.decide", Args: with, Invoke: inv, Turn: 1, State: "s"})
}

var fast = Choice{Profile: "fast", Alias: "profile.fast"}

// TestAProfileTakesTheDefaultAgentsCalls: a configured profile
// (default_profile:) answers the default agent's calls; the story's other
// agents keep theirs.
func TestAProfileTakesTheDefaultAgentsCalls(t *testing.T) {
	h, invs, sink, asked := profileHost(t, 0, nil, WithSelection(NewSelection(fast, false, nil)))
	res, err := decide(t, h, invs["builtin"], nil)
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if _, ok := res.Data["submitted"]; !ok {
		t.Errorf("a call on the built-in path keeps its bind shape: %v", res.Data)
	}
	if _, err := decide(t, h, invs["plug"], nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"fast model=fast-model effort=low profile=fast alias=", "plug model=plug-decl effort= profile= alias=agent.plug"}
	if strings.Join(*asked, "|") != strings.Join(want, "|") {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(*asked, "\n"), strings.Join(want, "\n"))
	}
	var start trace.AgentCallStart
	for _, ev := range sink.Events() {
		if ev.Kind == trace.KindAgentCallStart {
			if err := trace.Decode(&ev, &start); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if start.Profile != "fast" || start.Model != "fast-model" || start.Effort != "low" {
		t.Errorf("agent.call.start %+v", start)
	}
}

// TestAnExplicitProfileTakesTheBuiltinAgents: a profile chosen for the
// run (--profile, --agent, :provider) answers every builtin agent's calls
// too (agent.plug is builtin.inprocess), not a subprocess plugin's.
func TestAnExplicitProfileTakesTheBuiltinAgents(t *testing.T) {
	h, invs, _, asked := profileHost(t, 0, nil, WithSelection(NewSelection(fast, true, nil)))
	if _, err := decide(t, h, invs["plug"], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := decide(t, h, &story.Invoke{Name: "host.agent.decide", Agent: "agent.sub"}, nil); err != nil {
		t.Fatal(err)
	}
	want := "fast model=fast-model effort=low profile=fast alias=agent.plug|sub model= effort= profile= alias=agent.sub"
	if got := strings.Join(*asked, "|"); got != want {
		t.Errorf("asked:\n%s\nwant:\n%s", got, want)
	}
}

func TestSelectionPrecedence(t *testing.T) {
	judge := map[string]any{"agent": "judge", "prompt": "Decide.", "schema": "schemas/verdict.json"}
	// A persona's profile wins over a default that was not chosen for the
	// run...
	sel := NewSelection(Choice{}, false, map[string]Choice{"judge": fast})
	h, invs, _, asked := profileHost(t, 0, nil, WithSelection(sel))
	decide(t, h, invs["builtin"], judge)
	decide(t, h, invs["builtin"], nil)
	if got := strings.Join(*asked, "|"); got != "fast model=fast-model effort=low profile=fast alias=|builtin model=claude-decl effort= profile= alias=" {
		t.Errorf("persona profile: %s", got)
	}
	// ... and a live switch applies to every call, personas included.
	prev := sel.Set(Choice{Profile: "fast", Alias: "profile.fast", Model: "switched", Effort: "high"})
	if !prev.IsZero() {
		t.Errorf("previous %+v", prev)
	}
	*asked = nil
	decide(t, h, invs["builtin"], judge)
	if got := strings.Join(*asked, "|"); got != "fast model=switched effort=high profile=fast alias=" {
		t.Errorf("after the switch: %s", got)
	}
}

func TestRunCostCapStopsTheRun(t *testing.T) {
	b := agent.NewBudget("--max-cost", "raise --max-cost", 0.03, 0)
	h, invs, sink, asked := profileHost(t, 0.02, nil, WithBudget(b))
	if _, err := decide(t, h, invs["plug"], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := decide(t, h, invs["plug"], nil); err != nil {
		t.Fatal(err) // $0.02 spent, under the cap: the second call goes out
	}
	_, err := decide(t, h, invs["plug"], nil)
	var cap *agent.CostCapError
	if !errors.As(err, &cap) || len(*asked) != 2 {
		t.Fatalf("third call: %v after %d calls, want the cap before the call", err, len(*asked))
	}
	if err.Error() != "cost cap reached: --max-cost is $0.0300 and this run's agent calls have cost $0.0400 (2 calls); raise --max-cost to go on" {
		t.Errorf("error %q", err)
	}
	evs := sink.Events()
	last := evs[len(evs)-1]
	var p trace.CostCapReached
	if last.Kind != trace.KindCostCapReached || trace.Decode(&last, &p) != nil || p.Scope != "--max-cost" || p.Calls != 2 {
		t.Errorf("last event %+v", last)
	}
}

func TestAProfilesQuota(t *testing.T) {
	h, invs, _, _ := profileHost(t, 0, &agent.Quota{MaxCalls: 1}, WithSelection(NewSelection(fast, false, nil)))
	if _, err := decide(t, h, invs["builtin"], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := decide(t, h, invs["plug"], nil); err != nil {
		t.Fatalf("another agent is not under the profile's quota: %v", err)
	}
	_, err := decide(t, h, invs["builtin"], nil)
	want := "cost cap reached: .kitsoki.yaml profiles.fast quota allows 1 agent calls and 1 were made ($0.0000); raise quota: under .kitsoki.yaml profiles.fast to go on"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestACapReachedInsideTheCallStopsTheRun(t *testing.T) {
	b := agent.NewBudget("--max-cost", "raise --max-cost", 1, 0)
	capErr := &agent.CostCapError{Scope: "--max-cost", Cap: 1, Spent: 1.2}
	st, _ := story.Load(filepath.Join("testdata", "ask", "app.yaml"))
	t.Cleanup(func() { st.Close() })
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	reg.Register("agent.plug", agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		return nil, &agent.AskError{Kind: agent.KindTransportError, Detail: capErr.Error(), Err: capErr, CostUSD: 1.2}
	}))
	h := New(st, reg, trace.NewMemSink(), WithBudget(b))
	var inv *story.Invoke
	for _, eff := range st.States["s"].OnEnter {
		if eff.Invoke.ID == "plug" {
			inv = eff.Invoke
		}
	}
	_, err := decide(t, h, inv, nil)
	if !errors.Is(err, capErr) {
		t.Fatalf("error %v, want the cap", err)
	}
	if spent, calls := b.Spent(); spent != 1.2 || calls != 1 {
		t.Errorf("charged %v over %d calls: a failed call's cost counts", spent, calls)
	}
}
