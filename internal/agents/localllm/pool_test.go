package localllm

import (
	"context"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Two pools (two runs' own, as runtime.Open gives them) share nothing: the
// same model starts a server in each; closing one pool stops and reaps
// its server only, and its agent's next call says the run ended, while
// the other pool's agent still answers from its own server.
func TestPoolsShareNothing(t *testing.T) {
	m := newManagedSetup(t)
	cfgA, cfgB := m.cfg, m.cfg
	cfgA.Pool, cfgB.Pool = NewPool(), NewPool()
	t.Cleanup(func() { cfgA.Pool.Close(); cfgB.Pool.Close() })
	a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, cfgA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newManaged(t, agent.Declaration{Model: "test-chat"}, cfgB)
	if err != nil {
		t.Fatal(err)
	}
	gotA, _ := askFake(t, a, "x")
	gotB, _ := askFake(t, b, "x")
	if gotA.PID == gotB.PID {
		t.Fatalf("two pools' agents reached one server (pid %d)", gotA.PID)
	}
	if n := len(readStates(t, m.state)); n != 2 {
		t.Errorf("%d servers spawned, want 2 (one per pool)", n)
	}
	if err := cfgA.Pool.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(gotA.PID) {
		t.Error("closing pool A left its server running")
	}
	if !alive(gotB.PID) {
		t.Fatal("closing pool A stopped pool B's server")
	}
	_, err = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"}))
	ae, ok := agent.AsAskError(err)
	want := "local_llm agent: managed mode: its local model servers were stopped: the run that owned them has ended"
	if !ok || ae.Kind != agent.KindTransportError || !strings.Contains(err.Error(), want) {
		t.Errorf("an agent of the closed pool: %v, want a transport_error containing %q", err, want)
	}
	if n := len(readStates(t, m.state)); n != 2 {
		t.Errorf("an agent of the closed pool started a server: %d spawned", n)
	}
	if again, _ := askFake(t, b, "x"); again.PID != gotB.PID {
		t.Errorf("pool B's agent moved to server %d, want its own %d", again.PID, gotB.PID)
	}
	if err := a.Close(); err != nil {
		t.Errorf("closing an agent of a closed pool: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(gotB.PID) {
		t.Error("the last Close of pool B's agent left its server running")
	}
}

// Closing a pool stops a server whose agent was never closed (the run
// ended first), and an agent acquiring after the close starts nothing.
func TestPoolCloseStopsWhatIsLeft(t *testing.T) {
	m := newManagedSetup(t)
	a, err := New(agent.Declaration{Model: "test-chat"}, m.cfg, nil) // never closed
	if err != nil {
		t.Fatal(err)
	}
	got, _ := askFake(t, a, "x")
	if err := m.cfg.Pool.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(got.PID) {
		t.Error("the pool's Close left the server running")
	}
	if err := m.cfg.Pool.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	late, err := New(agent.Declaration{Model: "test-chat"}, m.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if _, err := late.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"})); err == nil ||
		!strings.Contains(err.Error(), "the run that owned them has ended") {
		t.Errorf("an agent built after the pool closed: %v", err)
	}
	if n := len(readStates(t, m.state)); n != 1 {
		t.Errorf("%d servers spawned, want 1", n)
	}
}
