package localllm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// managedSetup is a managed-mode agent config whose release archive holds a
// script starting the fake llama-server.
type managedSetup struct {
	env   *testEnv
	state string // fake servers' state dir
	cfg   Config
}

func newManagedSetup(t *testing.T, fakeEnv ...string) *managedSetup {
	t.Helper()
	state := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec env " + fakeServerEnv + "=1 FAKE_STATE_DIR='" + state + "' " + strings.Join(fakeEnv, " ") + " '" + exe + "' \"$@\"\n"
	e := newTestEnv(t, script)
	return &managedSetup{env: e, state: state, cfg: Config{Options: e.opts(), Pool: NewPool(), StopGrace: 300 * time.Millisecond, HealthTimeout: 20 * time.Second}}
}

// askFake asks the agent and decodes the fake server's self-description.
func askFake(t *testing.T, a agent.Agent, prompt string) (struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
}, *agent.AskResponse) {
	t.Helper()
	call := agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: prompt})
	call.Alias = "agent.local"
	resp, err := a.Ask(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		PID  int      `json:"pid"`
		Args []string `json:"args"`
	}
	var text string // a free-form answer is its text, as a JSON string
	if err := json.Unmarshal(resp.Submission, &text); err != nil {
		t.Fatalf("submission %s: %v", resp.Submission, err)
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("submission %s: %v", resp.Submission, err)
	}
	return out, resp
}

// newManaged builds a managed agent that is closed (its server stopped) when
// the test ends, whatever happens.
func newManaged(t *testing.T, decl agent.Declaration, cfg Config) (*Agent, error) {
	t.Helper()
	a, err := New(decl, cfg, nil)
	if err == nil {
		t.Cleanup(func() { _ = a.Close() })
	}
	return a, err
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitReaped waits until a's sidecar process has been reaped (its exit
// recorded), so the next call sees it dead: no wall-clock guess.
func waitReaped(a *Agent) {
	a.sidecarHold.mu.Lock()
	s := a.sidecarHold.sidecar
	a.sidecarHold.mu.Unlock()
	s.sem <- struct{}{}
	p := s.proc
	<-s.sem
	if p != nil {
		<-p.done
	}
}

func TestManagedLazy(t *testing.T) {
	m := newManagedSetup(t)
	reg := agent.NewRegistry(nil)
	reg.RegisterTransport(agent.PluginLocalLLM, NewBuilder(m.cfg))
	reg.Configure(map[string]agent.Declaration{"agent.local": {Plugin: agent.PluginLocalLLM, Model: "test-chat", Grammar: true}})
	if _, err := reg.Get("agent.local"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(m.env.srv.hits); n != 0 {
		t.Errorf("building and closing a managed agent made %d downloads", n)
	}
	if _, err := os.Stat(m.env.cache); !os.IsNotExist(err) {
		t.Errorf("the cache was touched: %v", err)
	}
	if st := readStates(t, m.state); len(st) != 0 {
		t.Errorf("a server was spawned: %+v", st)
	}
}

func TestManagedSpawnHealthParallelAndClose(t *testing.T) {
	m := newManagedSetup(t, "FAKE_HEALTH_DELAY=400ms")
	a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, resp := askFake(t, a, "hello")
	dir := filepath.Join(m.env.cache, "bin", "llama-t1")
	model := filepath.Join(m.env.cache, "models", "test-chat.gguf")
	if len(got.Args) != 8 {
		t.Fatalf("args = %q", got.Args)
	}
	port := got.Args[5]
	want := []string{"-m", model, "--host", "127.0.0.1", "--port", port, "--parallel", "4"}
	if d := cmp.Diff(want, got.Args); d != "" {
		t.Errorf("llama-server args (-want +got):\n%s", d)
	}
	states := readStates(t, m.state)
	if len(states) != 1 {
		t.Fatalf("%d servers spawned, want 1", len(states))
	}
	st := states[0]
	if st.EarlyChats != 0 {
		t.Errorf("%d chat requests reached the server before /health said ok", st.EarlyChats)
	}
	if !strings.HasPrefix(st.LDLibPath, dir) {
		t.Errorf("LD_LIBRARY_PATH = %q, want it to start with %s", st.LDLibPath, dir)
	}
	if resp.Meta["model"] != "test-chat" {
		t.Errorf("meta model = %v", resp.Meta["model"])
	}
	out := m.env.progress.String()
	for _, w := range []string{"downloading llama-server t1 (test) …\n", "downloading model test-chat …\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("announcements lack %q:\n%s", w, out)
		}
	}
	// A second call reuses the process.
	again, _ := askFake(t, a, "hello")
	if again.PID != got.PID {
		t.Errorf("second call hit pid %d, want %d", again.PID, got.PID)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(got.PID) {
		t.Error("llama-server still running after Close")
	}
	if st := readStates(t, m.state)[0]; !st.Term {
		t.Error("the server was not sent SIGTERM")
	}
}

func TestManagedSIGKILLAfterGrace(t *testing.T) {
	m := newManagedSetup(t, "FAKE_IGNORE_TERM=1")
	a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := askFake(t, a, "hi")
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < m.cfg.StopGrace {
		t.Errorf("Close returned after %s, before the %s grace", el, m.cfg.StopGrace)
	}
	if alive(got.PID) {
		t.Error("a server ignoring SIGTERM survived Close")
	}
	if st := readStates(t, m.state)[0]; !st.Term {
		t.Error("SIGTERM was not tried first")
	}
}

func TestManagedSharedAcrossAgents(t *testing.T) {
	m := newManagedSetup(t)
	// Two sessions, each with its own registry, one pool.
	var agents []agent.Agent
	for range 2 {
		a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	var wg sync.WaitGroup
	pids := make([]int, 4)
	for i := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := agents[i%2].Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"}))
			if err != nil {
				t.Error(err)
				return
			}
			var out struct{ PID int }
			text, _ := resp.Meta["result"].(string) // the free-form answer's text
			_ = json.Unmarshal([]byte(text), &out)
			pids[i] = out.PID
		}()
	}
	wg.Wait()
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Fatalf("calls reached different servers: %v", pids)
		}
	}
	if n := len(readStates(t, m.state)); n != 1 {
		t.Errorf("%d servers spawned, want 1", n)
	}
	_ = agents[0].Close()
	if !alive(pids[0]) {
		t.Fatal("closing one user stopped the shared server")
	}
	_ = agents[1].Close()
	if alive(pids[0]) {
		t.Error("the last Close left the server running")
	}
}

func TestManagedRestartAfterCrash(t *testing.T) {
	m := newManagedSetup(t)
	a, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first, _ := askFake(t, a, "hi")

	// Crash during a call: the call fails with the crash.
	_, err = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "die"}))
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindPluginCrash ||
		!strings.HasPrefix(ae.Detail, "local_llm agent: llama-server died during the call: exit status 3; last output: fatal: segfault in the fake model") {
		t.Fatalf("crash call: %v", err)
	}
	second, resp := askFake(t, a, "hi")
	if second.PID == first.PID {
		t.Fatal("no new server after the crash")
	}
	if _, ok := resp.Meta["sidecar_restarted"]; ok {
		t.Error("a crash already reported as a call error was reported again")
	}

	// Death between calls: the next call restarts it and records why.
	if err := syscall.Kill(second.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitReaped(a)
	third, resp := askFake(t, a, "hi")
	if third.PID == second.PID {
		t.Fatal("dead server not replaced")
	}
	if r, _ := resp.Meta["sidecar_restarted"].(string); r != "llama-server had died (signal: killed); restarted it" {
		t.Errorf("sidecar_restarted = %q", r)
	}
}

func TestManagedStartFailures(t *testing.T) {
	t.Run("server exits at start", func(t *testing.T) {
		m := newManagedSetup(t, "FAKE_FAIL_START=1")
		a, _ := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
		defer a.Close()
		_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"}))
		model := filepath.Join(m.env.cache, "models", "test-chat.gguf")
		wantErr(t, err, agent.KindPluginCrash, "agent: plugin_crash: local_llm agent: managed mode: llama-server exited before becoming healthy: exit status 1; last output: error: failed to load model '"+model+"'")
	})
	t.Run("health timeout", func(t *testing.T) {
		m := newManagedSetup(t, "FAKE_HEALTH_DELAY=1h")
		m.cfg.HealthTimeout = 300 * time.Millisecond
		a, _ := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
		defer a.Close()
		_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"}))
		ae, ok := agent.AsAskError(err)
		if !ok || ae.Kind != agent.KindPluginCrash || !strings.Contains(ae.Detail, "did not report healthy on http://127.0.0.1:") {
			t.Fatalf("got %v", err)
		}
		for _, st := range readStates(t, m.state) {
			if alive(st.PID) {
				t.Errorf("unhealthy server %d left running", st.PID)
			}
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		m := newManagedSetup(t)
		mod := m.env.pins.Models["test-chat"]
		mod.File.SHA256 = strings.Repeat("a", 64)
		m.env.pins.Models["test-chat"] = mod
		a, _ := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
		defer a.Close()
		_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: "x"}))
		ae, ok := agent.AsAskError(err)
		if !ok || ae.Kind != agent.KindTransportError || !errors.Is(err, ErrChecksum) ||
			!strings.HasPrefix(ae.Detail, "local_llm agent: managed mode: model test-chat: sha256 mismatch: want "+strings.Repeat("a", 64)+", got ") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("server_bin skips the binary fetch", func(t *testing.T) {
		m := newManagedSetup(t)
		bin := fakeServerScript(t, t.TempDir(), "FAKE_STATE_DIR="+m.state)
		port := freePortT(t)
		a, _ := newManaged(t, agent.Declaration{Model: "test-chat", ServerBin: bin, Port: port}, m.cfg)
		defer a.Close()
		got, _ := askFake(t, a, "x")
		if got.Args[5] != strconv.Itoa(port) {
			t.Errorf("--port %s, want the declared %d", got.Args[5], port)
		}
		if n := m.env.srv.hitCount("/rel/llama-t1.tar.gz"); n != 0 {
			t.Errorf("release fetched %d times despite server_bin", n)
		}
		if st := readStates(t, m.state); len(st) != 1 || st[0].LDLibPath != os.Getenv("LD_LIBRARY_PATH") {
			t.Errorf("server_bin run with a changed LD_LIBRARY_PATH: %+v", st)
		}
	})
}

func freePortT(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
