package claudecli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// recordSink is a host.Sink keeping events in memory.
type recordSink struct {
	mu     sync.Mutex
	events []plugin.Event
}

func (s *recordSink) Append(ev *plugin.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *ev)
	return nil
}

// AppendPayload keeps the event with its typed payload as a map.
func (s *recordSink) AppendPayload(ev *plugin.Event, p trace.Payload) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	e := *ev
	e.Kind = p.Kind()
	if err := json.Unmarshal(b, &e.Payload); err != nil {
		return err
	}
	return s.Append(&e)
}

func (s *recordSink) NextSeq(int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

func (s *recordSink) Now() time.Time { return time.Now() }

// TestBuiltinRouteThroughTheHost runs host.agent.decide and host.agent.ask
// invokes that name no agent: through the host, with NewBuiltin as its
// built-in agent, and checks the bind keys of story-format.md §9, the
// sub-events, and that a provider's secret reaches the child but not the
// trace.
func TestBuiltinRouteThroughTheHost(t *testing.T) {
	const secret = "glm-token-0123456789"
	st, err := story.Load("testdata/builtin/app.yaml", story.WithLookupEnv(func(k string) (string, bool) {
		if k == "TEST_GLM_TOKEN" {
			return secret, true
		}
		return "", false
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := newHarness(t,
		fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "business travel"}}}, Result: "Approved: business travel."},
		fakeRun{Result: "No, 40 is modest."},
		fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "reject", "reason": "no receipt"}}}, Result: "Rejected."})
	sink := &recordSink{}
	hs := host.New(st, agent.NewRegistry(nil), sink, host.WithBuiltin(h.builtin()))

	effects := st.States["a"].OnEnter
	dispatch := func(i int, args map[string]any) map[string]any {
		t.Helper()
		res, err := hs.Dispatch(context.Background(), &host.Call{Namespace: effects[i].Invoke.Name, Args: args,
			Invoke: effects[i].Invoke, SessionID: "sess-1", Turn: 1, State: "a", World: map[string]any{"amount": 40}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		return res.Data
	}

	decide := dispatch(0, map[string]any{"agent": "auditor", "prompt": "Audit: taxi, 40.", "schema": "schemas/verdict.json"})
	meta := decide["meta"].(map[string]any)
	for _, k := range []string{"result", "session_id", "usage", "cost_usd", "total_cost_usd", "duration_ms", "num_turns", "model", "exit_code"} {
		if _, ok := meta[k]; !ok {
			t.Errorf("meta lacks %s: %v", k, meta)
		}
	}
	if diff := cmp.Diff(map[string]any{"decision": "approve", "reason": "business travel"}, decide["submitted"]); diff != "" {
		t.Errorf("submitted (-want +got):\n%s", diff)
	}
	if decide["rationale"] != "Approved: business travel." || decide["exit_code"] != 0 || decide["ok"] != true ||
		decide["claude_session_id"] != meta["session_id"] || decide["claude_session_id"] == "" {
		t.Errorf("decide bind data = %v", decide)
	}

	ask := dispatch(1, map[string]any{"prompt": "Is 40 a lot?", "provider": "glm"})
	if ask["stdout"] != "No, 40 is modest." || ask["exit_code"] != 0 || ask["ok"] != true {
		t.Errorf("ask bind data = %v", ask)
	}
	// ask with a schema binds the submission as submitted, beside stdout.
	judged := dispatch(2, map[string]any{"prompt": "Judge it.", "schema": "schemas/verdict.json"})
	if diff := cmp.Diff(map[string]any{"decision": "reject", "reason": "no receipt"}, judged["submitted"]); diff != "" {
		t.Errorf("ask with schema: submitted (-want +got):\n%s", diff)
	}
	if judged["stdout"] != "Rejected." || judged["ok"] != true || judged["exit_code"] != 0 {
		t.Errorf("ask with schema: bind data = %v", judged)
	}
	if _, ok := judged["rationale"]; ok {
		t.Errorf("ask has decide's rationale key: %v", judged)
	}

	logs := h.logs()
	if logs[1].Env["ANTHROPIC_AUTH_TOKEN"] != secret || logs[1].Flags["--model"] != "glm-4.6" {
		t.Errorf("provider not applied: env %v flags %v", logs[1].Env, logs[1].Flags)
	}

	var kinds []string
	for _, ev := range sink.events {
		kinds = append(kinds, ev.Kind)
	}
	want := []string{"agent.call.start", "agent.claude.mcp.submit_kitsoki", "agent.call.complete", "agent.call.start", "agent.call.complete",
		"agent.call.start", "agent.claude.mcp.submit_kitsoki", "agent.call.complete"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("trace kinds (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(sink.events)
	if strings.Contains(string(b), secret) {
		t.Errorf("the provider's secret reached the trace events: %s", b)
	}
}
