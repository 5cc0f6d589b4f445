package claudecli

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// TestTraceModelIsTheModelTheCLIRuns dispatches one invoke per source of
// the model through the host, to the built-in path and to a claude_cli
// alias, and checks that the model agent.call.start and the closing event
// record is the --model the fake claude was started with.
func TestTraceModelIsTheModelTheCLIRuns(t *testing.T) {
	st, err := story.Load("testdata/models/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	submit := fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "r"}}}, Result: "ok"}
	h := newHarness(t, submit, fakeRun{Result: "a"}, fakeRun{Result: "b"}, fakeRun{Result: "c"}, fakeRun{Result: "d"})

	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	decl, _ := reg.Declaration("agent.router")
	decl.Command = h.bin
	router, err := Build(decl, agent.BuildEnv{})
	if err != nil {
		t.Fatal(err)
	}
	router.(*Agent).opts.Environ = h.environ()
	reg.Register("agent.router", router)
	t.Cleanup(func() { _ = reg.Close() })

	effects := st.States["a"].OnEnter
	routed := effects[3].Invoke
	sink := trace.NewMemSink()
	hs := host.New(st, reg, sink, host.WithBuiltin(h.builtin()),
		host.WithRoutes(map[*story.Invoke]*host.Route{routed: {Profile: "claude", Model: "routed-model"}}))
	defer hs.Close()

	want := []string{
		"persona-model",     // the persona's, over the declaration's
		"glm-4.6",           // the provider's, over the persona's
		"claude-decl-model", // agent.claude's declaration, on the built-in path
		"routed-model",      // a route's, over the persona's
		"router-decl-model", // the alias's declaration
	}
	args := []map[string]any{ // the with: maps, as rendered
		{"agent": "auditor", "prompt": "Audit: taxi, 40.", "schema": "schemas/verdict.json"},
		{"agent": "auditor", "prompt": "Is 40 a lot?", "provider": "glm"},
		{"prompt": "Is 40 a lot?"},
		{"agent": "auditor", "prompt": "Is 40 a lot?"},
		{"prompt": "Is 40 a lot?"},
	}
	for i, eff := range effects {
		res, err := hs.Dispatch(context.Background(), &host.Call{Namespace: eff.Invoke.Name, Args: args[i], Invoke: eff.Invoke,
			SessionID: "sess-1", Turn: 1, State: "a", World: map[string]any{}})
		if err != nil || res.Err != nil {
			t.Fatalf("invoke %d: %v %v", i, err, res.Err)
		}
	}
	var ran, started, closed []string
	for _, l := range h.logs() {
		ran = append(ran, l.Flags["--model"])
	}
	for _, ev := range sink.Events() {
		m, _ := ev.Payload["model"].(string)
		switch ev.Kind {
		case trace.KindAgentCallStart:
			started = append(started, m)
		case trace.KindAgentCallComplete:
			closed = append(closed, m)
		}
	}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("--model the CLI ran with (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ran, started); diff != "" {
		t.Errorf("agent.call.start model vs the CLI's --model (-cli +trace):\n%s", diff)
	}
	if diff := cmp.Diff(ran, closed); diff != "" {
		t.Errorf("agent.call.complete model vs the CLI's --model (-cli +trace):\n%s", diff)
	}
}
