package localllm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const modelStory = `app: {id: local-models}
hosts: [host.agent.ask]
agents:
  judge: {system_prompt: "Judge.", model: persona-model}
agent_plugins:
  agent.local: {plugin: builtin.local_llm, endpoint: "ENDPOINT", model: tiny}
  agent.managed: {plugin: builtin.local_llm, model: test-chat}
root: s
states:
  s:
    on_enter:
      - invoke: host.agent.ask
        agent: agent.local
        id: persona
        with: {agent: judge, prompt: "p"}
      - invoke: host.agent.ask
        agent: agent.local
        id: routed
        with: {agent: judge, prompt: "p"}
      - invoke: host.agent.ask
        agent: agent.managed
        id: managed
        with: {agent: judge, prompt: "p"}
      - invoke: host.agent.ask
        agent: agent.local
        id: fallback
        with: {agent: judge, prompt: "p", schema: verdict.json}
    terminal: true
`

// TestTraceModelIsTheModelTheServerServes dispatches local_llm calls
// through the host and checks that the model agent.call.start records is
// the one the server was asked for (an endpoint) or runs (a managed
// sidecar): a persona's model never reaches a local server, a route's
// reaches an endpoint but not a sidecar, which serves its pinned model.
// After a fallback, the closing event records the model agent.claude was
// asked with.
func TestTraceModelIsTheModelTheServerServes(t *testing.T) {
	cs := newChatServer(t, nil) // answers {"verdict":"approve"}
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(filepath.Join(dir, "verdict.json"), []byte(`{"type":"object","required":["decision"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, []byte(strings.Replace(modelStory, "ENDPOINT", cs.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	m := newManagedSetup(t)
	reg := agent.NewRegistry(nil)
	reg.RegisterTransport(agent.PluginLocalLLM, NewBuilder(m.cfg))
	reg.Configure(st.Plugins)
	var mu sync.Mutex
	var claudeModels []string
	reg.Register(agent.DefaultAlias, agent.AgentFunc(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
		mu.Lock()
		claudeModels = append(claudeModels, call.Model)
		mu.Unlock()
		return &agent.AskResponse{Submission: []byte(`{"decision":"approve"}`)}, nil
	}))
	t.Cleanup(func() { _ = reg.Close() })

	effects := st.States["s"].OnEnter
	routes := map[*story.Invoke]*host.Route{
		effects[1].Invoke: {Profile: "agent.local", Alias: "agent.local", Model: "pinned-small"},
		effects[2].Invoke: {Profile: "agent.managed", Alias: "agent.managed", Model: "not-served"},
	}
	sink := trace.NewMemSink()
	hs := host.New(st, reg, sink, host.WithRoutes(routes))
	defer hs.Close()
	args := []map[string]any{
		{"agent": "judge", "prompt": "p"},
		{"agent": "judge", "prompt": "p"},
		{"agent": "judge", "prompt": "p"},
		{"agent": "judge", "prompt": "p", "schema": "verdict.json"},
	}
	var managedArgs []string
	for i, eff := range effects {
		res, err := hs.Dispatch(context.Background(), &host.Call{Namespace: eff.Invoke.Name, Args: args[i], Invoke: eff.Invoke, Turn: 1, State: "s"})
		if err != nil || res.Err != nil {
			t.Fatalf("invoke %d: %v %v", i, err, res.Err)
		}
		if i == 2 { // a free-form answer is its text: the fake's self-description
			text, _ := res.Data["submission"].(string)
			var sub struct{ Args []string }
			if err := json.Unmarshal([]byte(text), &sub); err != nil {
				t.Fatalf("managed submission %q: %v", text, err)
			}
			managedArgs = sub.Args
		}
	}

	var started, closed []string
	for _, ev := range sink.Events() {
		m, _ := ev.Payload["model"].(string)
		switch ev.Kind {
		case trace.KindAgentCallStart:
			started = append(started, m)
		case trace.KindAgentCallComplete:
			closed = append(closed, m)
		}
	}
	var asked []string // the model of each request the endpoint got
	for _, r := range cs.requests() {
		m, _ := r.Body["model"].(string)
		asked = append(asked, m)
	}
	// The fallback call is asked three times (the answer, then two
	// repairs with the violations) before agent.claude stands in.
	if diff := cmp.Diff([]string{"tiny", "pinned-small", "tiny", "tiny", "tiny"}, asked); diff != "" {
		t.Fatalf("models the endpoint was asked for (-want +got):\n%s", diff)
	}
	if len(managedArgs) < 2 || managedArgs[0] != "-m" || filepath.Base(managedArgs[1]) != "test-chat.gguf" {
		t.Errorf("the sidecar runs %q, want -m …/test-chat.gguf", managedArgs)
	}
	if diff := cmp.Diff([]string{"persona-model"}, claudeModels); diff != "" {
		t.Fatalf("models agent.claude was asked with (-want +got):\n%s", diff)
	}
	wantStart := []string{asked[0], asked[1], "test-chat", asked[2]}
	if diff := cmp.Diff(wantStart, started); diff != "" {
		t.Errorf("agent.call.start models (-used +trace):\n%s", diff)
	}
	wantClosed := []string{asked[0], asked[1], "test-chat", claudeModels[0]}
	if diff := cmp.Diff(wantClosed, closed); diff != "" {
		t.Errorf("agent.call.complete models (-used +trace):\n%s", diff)
	}
}

// TestManagedRefusesAnotherModel: a managed sidecar serves its pinned model
// only; a call for another one fails before anything is fetched or spawned.
func TestManagedRefusesAnotherModel(t *testing.T) {
	m := newManagedSetup(t)
	a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Ask(context.Background(), &agent.Call{Request: &agent.AskRequest{Verb: "ask", Prompt: "p"}, Model: "other"})
	ae, ok := agent.AsAskError(err)
	want := `local_llm agent: model "other" is not served here: a managed sidecar serves its pinned model "test-chat" only (declare another alias for "other")`
	if !ok || ae.Kind != agent.KindTransportError || ae.Detail != want {
		t.Errorf("error = %v, want transport_error: %s", err, want)
	}
	if n := len(m.env.srv.hits); n != 0 {
		t.Errorf("%d downloads for a refused call", n)
	}
}
