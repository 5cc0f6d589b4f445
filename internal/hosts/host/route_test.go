package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const routeStory = `app: {id: route-test}
hosts: [host.agent.decide]
agents:
  judge: {system_prompt: "Judge.", model: persona-model}
agent_plugins:
  agent.a: {plugin: builtin.inprocess}
  agent.b: {plugin: builtin.inprocess, model: decl-model}
providers:
  cheap: {model: provider-model, env: {X: "1"}}
root: s
states:
  s:
    on_enter:
      - invoke: host.agent.decide
        agent: agent.a
        id: pick
        with: {agent: judge, prompt: "Pick one.", schema: schemas/v.json}
      - invoke: host.agent.decide
        agent: agent.a
        id: bare
        with: {prompt: "Pick one.", schema: schemas/v.json}
    terminal: true
`

func loadRouteStory(t *testing.T) (*story.Story, *story.Invoke, *story.Invoke) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "schemas"), 0o755)
	os.WriteFile(filepath.Join(dir, "schemas", "v.json"), []byte(`{"type":"object"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(routeStory), 0o644)
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	effs := st.States["s"].OnEnter
	return st, effs[0].Invoke, effs[1].Invoke
}

// seen records which agent answered and what it was told.
type seen struct {
	who string
	ci  agent.Call // Request and Validate cleared
}

func recorder(name string, out *[]seen) agent.Agent {
	return agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		s := seen{who: name, ci: *call}
		s.ci.Request, s.ci.Validate = nil, nil
		*out = append(*out, s)
		return &agent.AskResponse{Submission: []byte(`{}`)}, nil
	})
}

func dispatch(t *testing.T, h *Host, inv *story.Invoke, with map[string]any) {
	t.Helper()
	res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.decide", Args: with, Invoke: inv, Turn: 1, State: "s"})
	if err != nil || res.Err != nil {
		t.Fatalf("dispatch: %v %v", err, res.Err)
	}
}

// A route sends the call to its alias (or the built-in path), hands model,
// effort and provider to the transport, replaces the persona's model, and
// records profile, model, effort and the pin on agent.call.start. Invokes
// without a route are untouched.
func TestRoutes(t *testing.T) {
	st, pick, bare := loadRouteStory(t)
	var got []seen
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	reg.Register("agent.a", recorder("agent.a", &got))
	reg.Register("agent.b", recorder("agent.b", &got))
	builtin := recorder("builtin", &got)
	with := map[string]any{"agent": "judge", "prompt": "Pick one.", "schema": "schemas/v.json"}
	bareWith := map[string]any{"prompt": "Pick one.", "schema": "schemas/v.json"}

	tests := []struct {
		name   string
		inv    *story.Invoke
		with   map[string]any
		route  *Route
		who    string
		ci     agent.Call
		start  map[string]any // keys checked on agent.call.start
		absent []string
	}{
		{name: "no route", inv: pick, with: with, who: "agent.a",
			ci:     agent.Call{Alias: "agent.a", Persona: st.Agents["judge"], SchemaPath: "schemas/v.json", Model: "persona-model"},
			start:  map[string]any{"agent": "judge", "model": "persona-model"},
			absent: []string{"profile", "effort", "pinned"}},
		{name: "pinned alias and model", inv: pick, with: with,
			route: &Route{Profile: "b", Alias: "agent.b", Model: "m2", Effort: "high", Pin: &PinState{Applied: true, Evidence: "e.json"}},
			who:   "agent.b",
			ci: agent.Call{Alias: "agent.b", Persona: st.Agents["judge"],
				SchemaPath: "schemas/v.json", Model: "m2", Effort: "high"},
			start: map[string]any{"profile": "b", "model": "m2", "effort": "high", "pinned": true, "pin_evidence": "e.json"}},
		{name: "unhonoured pin keeps the invoke's agent", inv: bare, with: bareWith,
			route: &Route{Profile: "agent.a", Alias: "agent.a", Pin: &PinState{Reason: "stale"}},
			who:   "agent.a", ci: agent.Call{Alias: "agent.a", SchemaPath: "schemas/v.json"},
			start:  map[string]any{"profile": "agent.a", "pinned": false, "pin_reason": "stale"},
			absent: []string{"model", "effort", "pin_evidence"}},
		{name: "declaration model without persona, route model wins", inv: bare, with: bareWith,
			route: &Route{Profile: "agent.b", Alias: "agent.b", Model: "m3"},
			who:   "agent.b", ci: agent.Call{Alias: "agent.b", SchemaPath: "schemas/v.json", Model: "m3"},
			start: map[string]any{"profile": "agent.b", "model": "m3"}, absent: []string{"pinned"}},
		{name: "built-in path through a provider", inv: pick, with: with,
			route: &Route{Profile: "cheap", Provider: "cheap", Model: "pm2"},
			who:   "builtin",
			ci: agent.Call{Persona: st.Agents["judge"], SchemaPath: "schemas/v.json",
				ProviderName: "cheap", Provider: &agent.Provider{Name: "cheap", Model: "provider-model", Env: map[string]string{"X": "1"}, Secrets: st.Providers["cheap"].Secrets}, Model: "pm2"},
			start: map[string]any{"profile": "cheap", "model": "pm2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			routes := map[*story.Invoke]*Route{}
			if tt.route != nil {
				routes[tt.inv] = tt.route
			}
			sink := trace.NewMemSink()
			h := New(st, reg, sink, WithBuiltin(builtin), WithRoutes(routes))
			defer h.Close()
			dispatch(t, h, tt.inv, tt.with)
			if len(got) != 1 || got[0].who != tt.who {
				t.Fatalf("answered by %+v, want %s", got, tt.who)
			}
			if diff := cmp.Diff(tt.ci, got[0].ci); diff != "" {
				t.Errorf("Call (-want +got):\n%s", diff)
			}
			start := sink.Events()[0].Payload
			for k, v := range tt.start {
				if start[k] != v {
					t.Errorf("start %s = %v, want %v (payload %v)", k, start[k], v, start)
				}
			}
			for _, k := range tt.absent {
				if _, ok := start[k]; ok {
					t.Errorf("start has %s: %v", k, start)
				}
			}
		})
	}
	if st.Agents["judge"].Model != "persona-model" {
		t.Error("a route changed the story's persona")
	}
}
