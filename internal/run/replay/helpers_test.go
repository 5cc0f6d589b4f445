package replay

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...cassette.LoadOption) *Cassette {
	t.Helper()
	c, err := parseCassette([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]cassette.LoadOption{cassette.WithGetenv(testkit.NoEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

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
	dir := testkit.Tree(t, files)
	st, err := story.Load(filepath.Join(dir, "app.yaml"), story.WithStubbedHosts()) // the rig's host answers with the test's stubs
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

// cassetteRig runs testkit.GreetStory with agent.g answered by a cassette.
func cassetteRig(t *testing.T, c *Cassette) *rig {
	return newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		return []host.Option{host.WithBuiltin(c.ReplayAgents(r.st, r.reg, nil))}
	}, func(r *rig) { c.ReplayHandlers(r.h, r.sink, r.st.App.ID) })
}

// parseCassette is cassette.Parse, wrapped.
func parseCassette(b []byte, path string, opts ...cassette.LoadOption) (*Cassette, error) {
	c, err := cassette.Parse(b, path, opts...)
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
