package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/cassette"
	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/trace"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// writeFiles writes files (relative path → content) into a new temp dir
// and returns the dir.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func noEnv(string) string { return "" }

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...cassette.LoadOption) *Cassette {
	t.Helper()
	c, err := parseCassette([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]cassette.LoadOption{cassette.WithGetenv(noEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// greetStory is a one-call story: lobby --greet--> greeting, whose on_enter
// asks agent.g (verb decide) for a greeting and goes back to the lobby on
// error.
const greetStory = `app: {id: greet-test, version: 0.1.0}
agent_plugins:
  agent.g: {plugin: builtin.inprocess}
agents:
  greeter: {system_prompt: "Greet.", model: test-model}
world:
  greeting: {type: object, default: {}}
intents:
  greet: {slots: {name: {type: string, required: true}}}
  back: {}
root: lobby
states:
  lobby:
    on: {greet: [{target: greeting}]}
  greeting:
    view: "{{ world.greeting.text ?? '' }}"
    on_enter:
      - invoke: host.agent.decide
        agent: agent.g
        id: compose
        with:
          agent: greeter
          prompt: "Greet {{ slots.name }}."
          schema: schemas/greeting.json
          name: "{{ slots.name }}"
        bind: {greeting: submitted}
        on_error: lobby
    on: {back: [{target: lobby}]}
`

const greetingSchema = `{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}},"additionalProperties":false}`

// epoch is the fake clock's start (testrunner.FlowEpoch).
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rig is a story session whose agents are given by the test.
type rig struct {
	t    *testing.T
	st   *story.Story
	reg  *agent.Registry
	h    *host.Host
	sink *trace.MemSink
	sess *orchestrator.Session
	clk  *clock.Fake
}

// newRig loads a story from files and starts a session. setup registers
// agents and handlers before the session starts.
func newRig(t *testing.T, files map[string]string, setup func(r *rig) []host.Option, post func(r *rig)) *rig {
	t.Helper()
	dir := writeFiles(t, files)
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, st: st, clk: clock.NewFake(epoch)}
	r.reg = agent.NewRegistry(nil)
	r.reg.Configure(st.Plugins)
	t.Cleanup(func() { r.reg.Close() })
	r.sink = trace.NewMemSink(trace.WithClock(r.clk))
	var hopts []host.Option
	if setup != nil {
		hopts = setup(r)
	}
	r.h = host.New(st, r.reg, r.sink, append([]host.Option{host.WithClock(r.clk)}, hopts...)...)
	if post != nil {
		post(r)
	}
	r.sess, err = orchestrator.New(st, r.h, r.sink, orchestrator.WithSessionID("s"), orchestrator.WithClock(r.clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.sess.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) do(intent string, slots map[string]any) *orchestrator.Outcome {
	r.t.Helper()
	out, err := r.sess.Turn(context.Background(), intent, slots, "")
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// events returns the trace events of the given kinds.
func (r *rig) events(kinds ...string) []plugin.Event {
	var out []plugin.Event
	for _, ev := range r.sink.Events() {
		for _, k := range kinds {
			if ev.Kind == k {
				out = append(out, ev)
			}
		}
	}
	return out
}

func greetFiles() map[string]string {
	return map[string]string{"app.yaml": greetStory, "schemas/greeting.json": greetingSchema}
}

// cassetteRig runs greetStory with agent.g answered by a cassette.
func cassetteRig(t *testing.T, c *Cassette) *rig {
	return newRig(t, greetFiles(), func(r *rig) []host.Option {
		return []host.Option{host.WithBuiltin(c.ReplayAgents(r.st, r.reg, nil))}
	}, func(r *rig) { c.ReplayHandlers(r.h, r.sink, r.st.App.ID) })
}

func contains2(s, sub string) bool { return strings.Contains(s, sub) }

// parseCassette is cassette.Parse, wrapped.
func parseCassette(b []byte, path string, opts ...cassette.LoadOption) (*Cassette, error) {
	c, err := cassette.Parse(b, path, opts...)
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
