package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestSelectionSwitchAndRecord: the run's selection sends the demo
// story's call to the chosen agent; a switch between turns takes effect
// at the next call and Record writes it under the session's turn.
func TestSelectionSwitchAndRecord(t *testing.T) {
	st := loadHello(t)
	fast, slow := &scripted{}, &scripted{}
	sel := host.NewSelection(host.Choice{Profile: "fast", Alias: "profile.fast"}, true, nil)
	rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: "s"}, Selection: sel,
		Agents: runtime.Agents{Override: map[string]agent.Agent{"profile.fast": fast, "profile.slow": slow, "agent.demo": &scripted{}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	greet(t, rt)
	prev := sel.Set(host.Choice{Profile: "slow", Alias: "profile.slow"})
	if err := rt.Record(trace.AgentSwitched{Command: ":provider slow", Switch: "provider", Profile: "slow", PreviousProfile: prev.Profile}); err != nil {
		t.Fatal(err)
	}
	out, err := rt.Session().Turn(context.Background(), "again", nil, "")
	if err != nil || out.Err != nil {
		t.Fatal(err, out.Err)
	}
	if _, err := rt.Session().Turn(context.Background(), "greet", map[string]any{"name": "Bob"}, ""); err != nil {
		t.Fatal(err)
	}
	if fast.calls != 1 || slow.calls != 1 {
		t.Errorf("calls: fast %d, slow %d; want one each", fast.calls, slow.calls)
	}
	var switched *trace.Event
	for _, ev := range rt.Memory().Events() {
		if ev.Kind == trace.KindAgentSwitched {
			switched = &ev
		}
	}
	if switched == nil || switched.Turn != 1 || switched.StatePath != "greeted" {
		t.Fatalf("kitsoki.agent.switched: %+v", switched)
	}
	if !strings.Contains(string(rt.Memory().Bytes()), `"payload":{"command":":provider slow","previous_profile":"fast","profile":"slow","switch":"provider"}`) {
		t.Errorf("trace:\n%s", rt.Memory().Bytes())
	}
}
