package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// counter answers {"n": <calls so far>} and can be told to fail.
type counter struct {
	calls atomic.Int64
	fail  func(n int64, req *agent.AskRequest) bool
}

func (c *counter) Ask(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
	req := call.Request
	n := c.calls.Add(1)
	if c.fail != nil && c.fail(n, req) {
		return nil, agent.Errorf(agent.KindTransportError, "call %d failed", n)
	}
	sub, _ := json.Marshal(map[string]any{"n": n, "call": req.With["call"]})
	return &agent.AskResponse{Submission: sub}, nil
}

func (c *counter) Close() error { return nil }

const batchStory = `
app: {id: batch}
agent_plugins: {agent.c: {plugin: builtin.inprocess}}
world:
  one: {type: object, default: {}}
  two: {type: object, default: {}}
  cached: {type: object, default: {}}
  recovered: {type: int, default: 0}
  ready: {type: bool, default: false}
intents: {run: {}, cache: {}, self: {}, chain: {}, post: {}, next: {hidden: true}}
root: s
states:
  s:
    on:
      run:
        - target: "."
          effects:
            - invoke: host.agent.ask
              agent: agent.c
              id: first
              with: {prompt: "one"}
              bind: {one: submission}
              on_error: recovery
            - invoke: host.agent.ask
              agent: agent.c
              id: second
              with: {prompt: "two: {{ world.one.n ?? 'none' }}"}
              bind: {two: submission}
      cache:
        - target: "."
          effects:
            - invoke: host.agent.ask
              agent: agent.c
              once: true
              with: {prompt: "cache"}
              bind: {cached: submission}
      self:
        - target: "."
          effects:
            - invoke: host.agent.ask
              agent: agent.c
              with: {prompt: "self"}
              on_error: s
      chain: [{target: f1}]
      post: [{target: p0}]
  recovery:
    on_enter: [{increment: {recovered: 1}}]
  f1:
    on_enter: [{invoke: host.agent.ask, agent: agent.c, with: {prompt: "f"}, on_error: f2}]
  f2:
    on_enter: [{invoke: host.agent.ask, agent: agent.c, with: {prompt: "f"}, on_error: f3}]
  f3:
    on_enter: [{invoke: host.agent.ask, agent: agent.c, with: {prompt: "f"}, on_error: f4}]
  f4:
    on_enter: [{invoke: host.agent.ask, agent: agent.c, with: {prompt: "f"}, on_error: f5}]
  f5:
    on_enter: [{invoke: host.agent.ask, agent: agent.c, with: {prompt: "f"}, on_error: f6}]
  f6: {}
  p0:
    on_enter:
      - set: {ready: false}
      - invoke: host.agent.ask
        agent: agent.c
        with: {prompt: "p"}
        bind: {ready: ok}
      - when: "world.ready"
        emit_intent: next
    on:
      next: [{target: p0}]
`

func TestBatchRerendersWithEarlierBinds(t *testing.T) {
	c := &counter{}
	var prompts []string
	rec := &recorder{resp: func(req *agent.AskRequest) (*agent.AskResponse, error) {
		prompts = append(prompts, req.Prompt)
		return c.Ask(context.Background(), agent.NewCall(req))
	}}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", rec))
	r.do("run")
	if diff := cmp.Diff([]string{"one", "two: 1"}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	called := r.events(trace.KindHarnessCalled)
	if got := called[1].Payload["args"].(map[string]any)["prompt"]; got != "two: none" {
		t.Errorf("harness.called renders at queue time: %v", got)
	}
	// Logical order: called ×2 (queue), then per call dispatched … returned.
	want := []string{"turn.input", "turn.start", "machine.intent_accepted", "machine.transition",
		"harness.called", "harness.called",
		"harness.dispatched", "agent.call.start", "agent.call.complete", "world.update", "harness.returned",
		"harness.dispatched", "agent.call.start", "agent.call.complete", "world.update", "harness.returned",
		"turn.end"}
	if diff := cmp.Diff(want, r.kinds(1)); diff != "" {
		t.Errorf("turn kinds (-want +got):\n%s", diff)
	}
}

func TestOnErrorDropsTheBatchAndEntersTarget(t *testing.T) {
	c := &counter{fail: func(n int64, _ *agent.AskRequest) bool { return n == 1 }}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
	out := r.do("run")
	if c.calls.Load() != 1 {
		t.Errorf("calls = %d: the rest of the batch was not dropped", c.calls.Load())
	}
	if r.sess.State() != "recovery" || r.sess.World()["recovered"] != int64(1) {
		t.Errorf("state %s recovered %v: on_error target not entered with its on_enter", r.sess.State(), r.sess.World()["recovered"])
	}
	if len(out.HostErrors) != 0 {
		t.Errorf("a handled failure is reported as unhandled: %v", out.HostErrors)
	}
	if r.sess.World()["last_error"] != "agent: transport_error: call 1 failed" {
		t.Errorf("last_error = %v", r.sess.World()["last_error"])
	}
}

func TestOnErrorSelfRedirectIgnored(t *testing.T) {
	c := &counter{fail: func(int64, *agent.AskRequest) bool { return true }}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
	r.do("self")
	if r.sess.State() != "s" || len(r.events(trace.KindMachineStateEntered)) != 1 {
		t.Errorf("self-redirect re-entered the state")
	}
}

func TestOnErrorDepthCap(t *testing.T) {
	c := &counter{fail: func(int64, *agent.AskRequest) bool { return true }}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
	r.do("chain")
	he := r.events(trace.KindHarnessError)
	if len(he) != 1 {
		t.Fatalf("harness.error events = %d", len(he))
	}
	p := he[0].Payload
	if p["reason"] != "on_error.depth_cap_exceeded" || p["prior"] != "f5" || p["target"] != "f6" || jsonOf(t, p["cap"]) != "4" || jsonOf(t, p["depth"]) != "5" {
		t.Errorf("harness.error payload = %s", jsonOf(t, p))
	}
	// Four redirects (f1→f2→f3→f4→f5) are followed; the fifth is refused.
	if r.sess.State() != "f5" {
		t.Errorf("state = %s, want f5", r.sess.State())
	}
}

func TestOnceSkipsWhenBound(t *testing.T) {
	c := &counter{}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
	r.do("cache")
	r.do("cache")
	if c.calls.Load() != 1 {
		t.Errorf("calls = %d, want 1 (second is cached)", c.calls.Load())
	}
	var skips []string
	for _, ev := range r.events(trace.KindWorldUpdate) {
		if ev.Payload["skipped"] != nil {
			skips = append(skips, jsonOf(t, ev.Payload))
		}
	}
	if diff := cmp.Diff([]string{`{"namespace":"host.agent.ask","skipped":"cached"}`}, skips); diff != "" {
		t.Errorf("once skips (-want +got):\n%s", diff)
	}
}

func TestPostBindPassIsCapped(t *testing.T) {
	c := &counter{}
	r := newRig(t, files{"app.yaml": batchStory}, withAgent("agent.c", c))
	r.do("post")
	he := r.events(trace.KindHarnessError)
	if len(he) != 1 || he[0].Payload["phase"] != "post_bind_emit" || jsonOf(t, he[0].Payload["max_depth"]) != "8" {
		t.Fatalf("harness.error = %v", he)
	}
	if c.calls.Load() != MaxPostBindPass+1 {
		t.Errorf("calls = %d, want %d", c.calls.Load(), MaxPostBindPass+1)
	}
}

func TestSecretsNeverReachTheTrace(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	const st = `
app: {id: secrets}
agent_plugins:
  agent.x:
    plugin: builtin.inprocess
  agent.sub:
    plugin: subprocess
    command: /bin/true
    env: {API_KEY: "${TEST_API_KEY}"}
intents: {go: {}}
root: s
states:
  s:
    on:
      go: [{target: ".", effects: [{invoke: host.agent.ask, agent: agent.x, with: {prompt: "hi"}, bind: {echo: submission}}]}]
`
	leaky := scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		// A careless plugin echoes the secret in its answer, its meta and
		// an error-ish string.
		sub, _ := json.Marshal(map[string]any{"text": "key is " + secret})
		return &agent.AskResponse{Submission: sub, Meta: map[string]any{"debug": secret}}, nil
	})
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte(st), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := story.Load(app, story.WithLookupEnv(func(k string) (string, bool) {
		if k == "TEST_API_KEY" {
			return secret, true
		}
		return "", false
	}))
	if err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "run.jsonl")
	w, err := trace.Create(tracePath, trace.WithSecrets(s.Secrets))
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry(nil)
	reg.Configure(s.Plugins)
	reg.Register("agent.x", leaky)
	sess, err := New(s, host.New(s, reg, w), w, WithSessionID("x"), WithWorld(map[string]any{"note": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Turn(context.Background(), "go", nil, "go "+secret); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Fatalf("the trace contains the secret value:\n%s", b)
	}
	if !strings.Contains(string(b), "REDACTED") {
		t.Errorf("nothing was redacted; the test did not exercise the secret:\n%s", b)
	}
	if _, err := trace.ReadFile(tracePath); err != nil {
		t.Errorf("the redacted trace does not read back: %v", err)
	}
}

// A chain of rooms that each call out and emit on the bound result to the
// next one settles in one turn as long as it takes at most MaxPostBindPass
// post-bind passes (Kitsoki's budget of 8 for emit_intent composition; a
// delivery tail chains 7).
func TestPostBindChainWithinTheCapLands(t *testing.T) {
	const rooms = 8 // Kitsoki's budget; the cap must allow it
	var b strings.Builder
	b.WriteString("app: {id: chain}\nagent_plugins: {agent.c: {plugin: builtin.inprocess}}\n")
	b.WriteString("intents: {go: {}, next: {hidden: true}}\nroot: s\nworld:\n")
	for i := 1; i <= rooms; i++ {
		fmt.Fprintf(&b, "  r%d: {type: bool, default: false}\n", i)
	}
	b.WriteString("states:\n  s:\n    on: {go: [{target: q1}]}\n")
	for i := 1; i <= rooms; i++ {
		next := fmt.Sprintf("q%d", i+1)
		if i == rooms {
			next = "landed"
		}
		fmt.Fprintf(&b, "  q%d:\n    on_enter:\n      - {invoke: host.agent.ask, agent: agent.c, with: {prompt: p}, bind: {r%d: ok}}\n      - {when: \"world.r%d\", emit_intent: next}\n    on: {next: [{target: %s}]}\n", i, i, i, next)
	}
	b.WriteString("  landed: {}\n")
	c := &counter{}
	r := newRig(t, files{"app.yaml": b.String()}, withAgent("agent.c", c))
	r.do("go")
	if he := r.events(trace.KindHarnessError); len(he) != 0 {
		t.Fatalf("harness.error = %v", he)
	}
	if r.sess.State() != "landed" || c.calls.Load() != rooms {
		t.Errorf("state %s after %d calls, want landed after %d", r.sess.State(), c.calls.Load(), rooms)
	}
}
