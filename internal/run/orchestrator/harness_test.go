package orchestrator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

// rig is a loaded story wired to in-memory trace and code-registered agents.
type rig struct {
	t     *testing.T
	story *story.Story
	reg   *agent.Registry
	host  *host.Host
	sink  *trace.MemSink
	sess  *Session
	start *Outcome
}

// files maps a path relative to the story dir to its content; "app.yaml"
// is the root file.
type files map[string]string

func writeStory(t testing.TB, fs files) string {
	t.Helper()
	return filepath.Join(testkit.Tree(t, fs), "app.yaml")
}

type rigOpt func(*rigConfig)

type rigConfig struct {
	agents   map[string]agent.Agent
	world    map[string]any
	hostOpts []host.Option
	root     string
	routing  RoutingConfig
	execMode string
	clock    clock.Clock
}

func withExecMode(mode string) rigOpt {
	return func(c *rigConfig) { c.execMode = mode }
}

func withClock(c clock.Clock) rigOpt {
	return func(cfg *rigConfig) { cfg.clock = c }
}

func withAgent(alias string, a agent.Agent) rigOpt {
	return func(c *rigConfig) { c.agents[alias] = a }
}

func withHostOpts(o ...host.Option) rigOpt {
	return func(c *rigConfig) { c.hostOpts = append(c.hostOpts, o...) }
}

func withRoot(state string) rigOpt {
	return func(c *rigConfig) { c.root = state }
}

func newRig(t *testing.T, fs files, opts ...rigOpt) *rig {
	t.Helper()
	cfg := &rigConfig{agents: map[string]agent.Agent{}}
	for _, o := range opts {
		o(cfg)
	}
	st, err := story.Load(writeStory(t, fs), story.WithStubbedHosts()) // the tests register their stubs on the host
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	for alias, a := range cfg.agents {
		reg.Register(alias, a)
	}
	t.Cleanup(func() { reg.Close() })
	sink := trace.NewMemSink(trace.WithSecrets(st.Secrets), trace.WithClock(clock.System{}))
	h := host.New(st, reg, sink, cfg.hostOpts...)
	sopts := []Option{WithSessionID("s1"), WithWorld(cfg.world)}
	if cfg.root != "" {
		sopts = append(sopts, WithRoot(cfg.root))
	}
	sopts = append(sopts, WithRouting(cfg.routing), WithExecMode(cfg.execMode))
	if cfg.clock != nil {
		sopts = append(sopts, WithClock(cfg.clock))
	}
	sess, err := New(st, h, sink, sopts...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.Start(context.Background())
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return &rig{t: t, story: st, reg: reg, host: h, sink: sink, sess: sess, start: out}
}

// do takes a turn from a typed line and fails the test on a trace error.
func (r *rig) do(line string) *Outcome {
	r.t.Helper()
	intent, slots, err := r.sess.ParseInput(line)
	if err != nil {
		r.t.Fatalf("parse %q: %v", line, err)
	}
	out, err := r.sess.Turn(context.Background(), intent, slots, "")
	if err != nil {
		r.t.Fatalf("turn %q: %v", line, err)
	}
	return out
}

// events returns the trace's events (header excluded) of the given kinds
// (all when none given).
func (r *rig) events(kinds ...string) []plugin.Event {
	var out []plugin.Event
	for _, ev := range r.sink.Events() {
		if len(kinds) == 0 {
			out = append(out, ev)
			continue
		}
		for _, k := range kinds {
			if ev.Kind == k {
				out = append(out, ev)
				break
			}
		}
	}
	return out
}

// turnEvents returns the events of turn n of the given kinds.
func (r *rig) turnEvents(n int64, kinds ...string) []plugin.Event {
	var out []plugin.Event
	for _, ev := range r.events(kinds...) {
		if ev.Turn == n {
			out = append(out, ev)
		}
	}
	return out
}

// kinds lists the kinds of the events of turn n, in order.
func (r *rig) kinds(n int64) []string {
	var out []string
	for _, ev := range r.sink.Events() {
		if ev.Turn == n {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// jsonOf renders v as compact JSON for comparisons of trace payloads.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// scripted is an in-process agent answering from a function.
func scripted(f func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error)) agent.Agent {
	return agent.AgentFunc(f)
}

// answer returns an agent that always submits the given JSON.
func answer(submission string) agent.Agent {
	return scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		return &agent.AskResponse{Submission: json.RawMessage(submission), Meta: map[string]any{"model": "test"}}, nil
	})
}

// sleeper ignores its context and answers after d.
// lateAnswer answers only after moving clk by d: past a hard deadline of d
// measured on clk, whatever the machine's load.
func lateAnswer(clk *clock.Fake, d time.Duration) agent.Agent {
	return scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		clk.Advance(d)
		return &agent.AskResponse{Submission: json.RawMessage(`{"late":true}`)}, nil
	})
}
