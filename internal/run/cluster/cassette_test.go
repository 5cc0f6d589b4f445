package cluster

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// cassetteConfig answers the story's agents from the hello story's recorded
// cassette, as `kitsoki worker --cassette` does: no Go agent, no live one.
func cassetteConfig(t *testing.T) func(*story.Story) runtime.Config {
	var c *replay.Cassette
	return func(st *story.Story) runtime.Config {
		if c == nil { // one replay for the session, as a worker keeps per session
			var err error
			c, err = replay.Load(filepath.Join(storiesDir, "hello/cassettes/demo.yaml"), cassette.WithSecrets(st.Secrets))
			if err != nil {
				t.Fatal(err)
			}
		}
		return runtime.Config{IgnorePins: true, Clock: clock.NewFake(time.Unix(0, 0)), Cassette: c}
	}
}

// A whole session whose calls are answered by a cassette on the worker ends
// with the world and the agent answers of a local run replaying the same
// cassette, turn for turn.
func TestCassetteBackedSessionMatchesLocalRun(t *testing.T) {
	ref, st := helloRef(t)
	steps := []step{
		{"greet", map[string]any{"name": "Ada", "style": "formal"}},
		{"again", nil},
		{"greet", map[string]any{"name": "Grace", "style": "casual"}},
		{"bye", nil},
	}

	cfg := cassetteConfig(t)(st)
	cfg.Session = &runtime.Session{ID: "s1", Journal: true}
	local, err := runtime.Open(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if _, err := local.Session().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		out, err := local.Session().Turn(context.Background(), s.intent, s.slots, "")
		if err != nil || out.Err != nil || out.Rejection != nil {
			t.Fatalf("local %s: %v %v %v", s.intent, err, out.Err, out.Rejection)
		}
	}

	env := loadedEnv()
	cfgFor := cassetteConfig(t)
	WorkerOptions{StoriesDir: storiesDir, Config: func(s *story.Story, _ string) runtime.Config { return cfgFor(s) }}.Register(env)
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, steps, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 0 || len(results) != len(steps) {
		t.Fatalf("rejected %v, %d results", rejected, len(results))
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(local.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	if got := res.World.Map()["greeting"].(map[string]any)["text"]; !strings.Contains(got.(string), "Grace") {
		t.Errorf("last greeting %q: not the cassette's answer for Grace", got)
	}
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	got := answers(evs)
	if len(got) != 2 || !strings.Contains(got[1], "Grace") {
		t.Errorf("want the two greetings answered from the cassette, got %q", got)
	}
	if d := cmp.Diff(answers(local.Memory().Events()), got); d != "" {
		t.Errorf("agent answers (-local +workflow):\n%s", d)
	}
}

// answers are the call ids and responses of a trace's completed agent
// calls.
func answers(evs []trace.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == "agent.call.complete" {
			b, _ := json.Marshal(e.Payload["response"])
			out = append(out, e.CallID+" "+string(b))
		}
	}
	return out
}
