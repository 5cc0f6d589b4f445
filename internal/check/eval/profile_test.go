package eval

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// A matrix profile is "claude" (the built-in path), a providers: entry
// (the built-in path through that provider) or an agent_plugins alias,
// also in its short form ("good" for agent.good). Each candidate's calls
// reach the right agent with the right provider and model, and the report
// names the backend, the provider and the model actually used.
func TestRunProfiles(t *testing.T) {
	dir := copyStory(t)
	setDataset(t, filepath.Join(dir, "app.yaml"), func(s string) string {
		return strings.Replace(s, "world:\n", "providers:\n  cheap: {model: provider-model}\nworld:\n", 1)
	})
	ds := filepath.Join(dir, "evals", "audit.yaml")
	setDataset(t, ds, func(s string) string {
		s = replaceBlock(s, "matrix:", "matrix:\n  profiles: [claude, cheap, good]\n  models: {claude: [opus-x]}\n  repeat: 1\n")
		return replaceBlock(s, "selection:", "selection:\n  strategy: cheapest_passing\n")
	})
	c := mustCheck(t, ds)
	if !c.OK() {
		t.Fatalf("dataset errors: %q", c.Errors)
	}
	type seenCall struct{ Provider, ProviderModel, Model, PersonaModel string }
	var mu sync.Mutex
	seen := map[seenCall]int{}
	builtin := agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		s := seenCall{Provider: call.ProviderName, Model: call.Model}
		if call.Provider != nil {
			s.ProviderModel = call.Provider.Model
		}
		if call.Persona != nil {
			s.PersonaModel = call.Persona.Model
		}
		mu.Lock()
		seen[s]++
		mu.Unlock()
		_, d := policy(req.Prompt)
		return answer(map[string]any{"decision": d, "reason": "builtin"}, map[string]any{"cost_usd": 0.001})
	})
	r, err := Run(context.Background(), c, Options{Registry: testAgents(t, c.Story), Builtin: builtin, Clock: clock.NewFake(t0), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, b)

	type cand struct{ Profile, Backend, Provider, Model string }
	var got []cand
	for _, c := range r.Candidates {
		got = append(got, cand{c.Profile, c.Backend, c.Provider, c.Model})
		if c.ComparatorPassRate != 1 || c.ExamplesRun != 10 {
			t.Errorf("%s: pass rate %v over %d calls", c.Label(), c.ComparatorPassRate, c.ExamplesRun)
		}
	}
	want := []cand{
		{"claude", "builtin.claude", "", "opus-x"},
		{"cheap", "builtin.claude", "cheap", "provider-model"},
		{"good", "builtin.inprocess", "", "m-default"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	// The built-in agent answered the claude candidate with the matrix's
	// model and the provider candidate through the provider, on the
	// provider's model; the persona is the story's, untouched. agent.good
	// answered the third.
	wantSeen := map[seenCall]int{
		{Model: "opus-x", PersonaModel: "m-default"}:                                                             10,
		{Provider: "cheap", ProviderModel: "provider-model", Model: "provider-model", PersonaModel: "m-default"}: 10,
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("built-in calls (-want +got):\n%s", diff)
	}
	// claude and cheap tie on cost (0.001, below agent.good's 0.002),
	// latency and pass rate: matrix order decides.
	if d := r.Decision; d.SelectedProfile != "claude" || d.SelectedModel != "opus-x" {
		t.Errorf("decision = %+v", d)
	}
}
