package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

func newAgent(t testing.TB, decl agent.Declaration, opts ...Option) *Agent {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	a, err := New(decl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func ask(t testing.TB, a *Agent, prompt string, with map[string]any) (*agent.AskResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "ask", Prompt: prompt, With: with}))
}

// wantAskError checks err is an AskError of kind with exactly detail.
func wantAskError(t *testing.T, err error, kind agent.ErrorKind, detail string) {
	t.Helper()
	ae, ok := agent.AsAskError(err)
	if !ok {
		t.Fatalf("error = %v (%T), want *agent.AskError", err, err)
	}
	if ae.Kind != kind {
		t.Errorf("kind = %q, want %q (error: %v)", ae.Kind, kind, err)
	}
	if ae.Detail != detail {
		t.Errorf("detail mismatch (-want +got):\n%s", cmp.Diff(detail, ae.Detail))
	}
}

func (a *Agent) currentPID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return 0
	}
	return a.proc.pid
}

func (a *Agent) current() *process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.proc
}

func TestAskRoundTripSpawnsLazilyAndReuses(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	if pid := a.currentPID(); pid != 0 {
		t.Fatalf("a process (pid %d) runs before the first Ask", pid)
	}
	resp, err := ask(t, a, "hello", map[string]any{"answer": `{"decision":"approve","note":"<ok> & é"}`})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(resp.Submission), `{"decision":"approve","note":"\u003cok\u003e \u0026 é"}`; got != want {
		t.Errorf("submission = %s, want %s", got, want)
	}
	if diff := cmp.Diff(map[string]any{"agent": "echo", "prompt_bytes": float64(5)}, resp.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	pid := a.currentPID()
	if _, err := ask(t, a, "again", nil); err != nil {
		t.Fatal(err)
	}
	if got := a.currentPID(); got != pid {
		t.Errorf("second Ask ran in pid %d, want the first process %d", got, pid)
	}
}

// TestWireRequest pins the request line byte for byte, and shows ids keep
// growing across a respawn.
func TestWireRequest(t *testing.T) {
	a := newAgent(t, helperDecl(t, "wire"))
	req := &agent.AskRequest{SessionID: "s", Turn: 2, StatePath: "review", Verb: "decide", Prompt: "a <b> & \"c\"",
		Schema: json.RawMessage(`{"type": "object"}`), With: map[string]any{"k": 1},
		World: plugin.World{Vars: map[string]any{"x": true}}, Deadline: "2026-01-01T00:00:00Z", CallID: "0123456789abcdef"}
	for id := 1; id <= 2; id++ {
		if id == 2 {
			<-a.current().exited
		}
		resp, err := a.Ask(context.Background(), agent.NewCall(req))
		if err != nil {
			t.Fatal(err)
		}
		var line string
		if err := json.Unmarshal(resp.Submission, &line); err != nil {
			t.Fatal(err)
		}
		want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"agent.ask","params":{"session_id":"s","turn":2,"state_path":"review","verb":"decide","prompt":"a \u003cb\u003e \u0026 \"c\"","schema":{"type":"object"},"with":{"k":1},"world":{"vars":{"x":true}},"deadline":"2026-01-01T00:00:00Z","call_id":"0123456789abcdef"}}`
		if line != want {
			t.Errorf("request %d on the wire (-want +got):\n%s", id, cmp.Diff(want, line))
		}
	}
}

func TestWorkingDirEnvAndArgs(t *testing.T) {
	dir := t.TempDir()
	decl := helperDecl(t, "env")
	decl.Dir = dir
	decl.Args = []string{"a b", "c"}
	decl.Env["KITSOKI_TEST_FOO"] = "bar"
	a := newAgent(t, decl)
	resp, err := ask(t, a, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(resp.Submission, &got); err != nil {
		t.Fatal(err)
	}
	wantDir, _ := filepath.EvalSymlinks(dir)
	gotDir, _ := filepath.EvalSymlinks(got["wd"])
	if gotDir != wantDir || got["foo"] != "bar" || got["args"] != "a b,c" {
		t.Errorf("plugin saw wd=%q foo=%q args=%q, want wd=%q foo=bar args=%q", gotDir, got["foo"], got["args"], wantDir, "a b,c")
	}
}

func TestCrashMidCall(t *testing.T) {
	a := newAgent(t, helperDecl(t, "crash-mid-call"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "helper: about to crash\npanic: model exploded\n"`)
}

func TestSecretsRedactedFromCrashDetailAndLog(t *testing.T) {
	const secret = "hunter2-secret"
	var logs testkit.SyncBuffer
	decl := helperDecl(t, "leak-secret")
	decl.Env["KITSOKI_TEST_SECRET"] = secret
	decl.Secrets = []string{secret}
	a := newAgent(t, decl, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: read response: EOF (plugin closed stdout); plugin exit status 2; stderr tail: "token is REDACTED\n"`)
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the secret reached the log:\n%s", logs.String())
	}
}

func TestCrashBetweenCallsThenRespawn(t *testing.T) {
	a := newAgent(t, helperDecl(t, "exit-after-one"))
	if _, err := ask(t, a, "one", nil); err != nil {
		t.Fatal(err)
	}
	first := a.current()
	select {
	case <-first.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("plugin did not exit after its one answer")
	}
	resp, err := ask(t, a, "two", nil)
	if err != nil {
		t.Fatalf("Ask after a crash between calls: %v", err)
	}
	if string(resp.Submission) != `{"n":1}` {
		t.Errorf("submission = %s", resp.Submission)
	}
	if a.currentPID() == first.pid {
		t.Error("the plugin was not respawned")
	}
}

func TestGarbageOnStdout(t *testing.T) {
	a := newAgent(t, helperDecl(t, "garbage"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: unmarshal response frame: invalid character 'h' in literal true (expecting 'r') (line: "this is not json"); plugin killed by kitsoki (signal: killed); no stderr output`)
}

func TestPartialLineThenExit(t *testing.T) {
	a := newAgent(t, helperDecl(t, "partial"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: read response: unexpected EOF (partial bytes: "{\"jsonrpc\":\"2.0\",\"id\":1,\"res"); plugin exit status 5; no stderr output`)
}

func TestNeverAnswersHitsDeadlineAndKeepsProcess(t *testing.T) {
	a := newAgent(t, helperDecl(t, "never"))
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Prompt: "x"}))
		cancel()
		wantAskError(t, err, agent.KindDeadlineExceeded, "subprocess agent: context cancelled waiting for response: context deadline exceeded")
		if i == 0 && !a.current().alive() {
			t.Fatal("a deadline killed the plugin; calls in flight on it would fail too")
		}
	}
}

func TestLateAnswerIsDiscarded(t *testing.T) {
	a := newAgent(t, helperDecl(t, "late"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{Prompt: "slow", With: map[string]any{"sleep_ms": 300}}))
	cancel()
	wantAskError(t, err, agent.KindDeadlineExceeded, "subprocess agent: context cancelled waiting for response: context deadline exceeded")
	// This call is in flight when the late answer arrives.
	resp, err := ask(t, a, "fast", map[string]any{"sleep_ms": 500})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `"fast"` {
		t.Errorf("got %s: the late answer to the timed-out call leaked into the next one", resp.Submission)
	}
}

func TestJSONRPCErrorIsPluginCrashAndKeepsProcess(t *testing.T) {
	a := newAgent(t, helperDecl(t, "rpc-error"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash, "subprocess agent: rpc error -32001: no model available")
	pid := a.currentPID()
	_, err = ask(t, a, "y", nil)
	wantAskError(t, err, agent.KindPluginCrash, "subprocess agent: rpc error -32001: no model available")
	if a.currentPID() != pid {
		t.Error("a JSON-RPC error restarted the plugin")
	}
}

func TestResultNotAnAskResponse(t *testing.T) {
	a := newAgent(t, helperDecl(t, "bad-result"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash, "subprocess agent: unmarshal AskResponse: result is [1,2], want an object")
	if !a.current().alive() {
		t.Error("a bad result killed the plugin")
	}
}

func TestOutOfOrderAnswers(t *testing.T) {
	a := newAgent(t, helperDecl(t, "out-of-order"))
	// Spawn first so both calls reach the same process.
	if _, err := a.live(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 2)
	errs := make([]error, 2)
	for i, p := range []string{"first", "second"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := ask(t, a, p, nil)
			errs[i] = err
			if err == nil {
				got[i] = string(resp.Submission)
			}
		}()
		time.Sleep(20 * time.Millisecond) // keep the send order
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{`"first"`, `"second"`}, got); diff != "" {
		t.Errorf("answers matched to the wrong calls (-want +got):\n%s", diff)
	}
}

// TestLargeMessagesBothWaysDoNotDeadlock has a single-threaded plugin
// write a large answer while kitsoki writes a large request: kitsoki must
// keep reading while it writes.
func TestLargeMessagesBothWaysDoNotDeadlock(t *testing.T) {
	a := newAgent(t, helperDecl(t, "big"))
	if _, err := a.live(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, prompt := range []string{"one", "two", strings.Repeat("p", 2<<20)} {
		wg.Add(1)
		time.Sleep(time.Duration(i) * 20 * time.Millisecond) // send in order
		go func() {
			defer wg.Done()
			resp, err := ask(t, a, prompt, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if len(resp.Submission) != 2<<20+2 {
				t.Errorf("submission of %d bytes", len(resp.Submission))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock: kitsoki stopped reading while writing a request")
	}
}

func TestOversizedResponseRefused(t *testing.T) {
	a := newAgent(t, helperDecl(t, "huge"))
	_, err := ask(t, a, "x", nil)
	ae, _ := agent.AsAskError(err)
	if ae == nil || ae.Kind != agent.KindPluginCrash ||
		!strings.HasPrefix(ae.Detail, `subprocess agent: response refused: message exceeds the 16 MiB limit (line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"submission\":\"xxxx`) ||
		!strings.HasSuffix(ae.Detail, `..."); plugin killed by kitsoki (signal: killed); no stderr output`) {
		t.Errorf("error = %v", err)
	}
}

func TestNonUTF8ResponseRefused(t *testing.T) {
	a := newAgent(t, helperDecl(t, "bad-utf8"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: response refused: message is not valid UTF-8 (line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"submission\":\"caf\xe9\"}}"); plugin killed by kitsoki (signal: killed); no stderr output`)
}

func TestNonUTF8RequestRefusedBeforeSpawn(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Schema: json.RawMessage("\"caf\xe9\"")}))
	wantAskError(t, err, agent.KindTransportError, "subprocess agent: request refused: message is not valid UTF-8")
	if a.currentPID() != 0 {
		t.Error("a refused request spawned the plugin")
	}
}

func TestPluginSendingARequestIsACrash(t *testing.T) {
	a := newAgent(t, helperDecl(t, "request"))
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash,
		`subprocess agent: plugin sent a request (method "hello") but may only send responses; plugin killed by kitsoki (signal: killed); no stderr output`)
}

func TestUnknownResponseIDIsIgnored(t *testing.T) {
	var logs testkit.SyncBuffer
	a := newAgent(t, helperDecl(t, "unknown-id"), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	resp, err := ask(t, a, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != "2" {
		t.Errorf("submission = %s, want 2", resp.Submission)
	}
	if !strings.Contains(logs.String(), "ignoring response #12345") {
		t.Errorf("the stray response was not logged:\n%s", logs.String())
	}
}

func TestStderrIsLoggedLineByLineAndBounded(t *testing.T) {
	var logs testkit.SyncBuffer
	a := newAgent(t, helperDecl(t, "stderr-spam"), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if _, err := ask(t, a, "x", nil); err != nil {
		t.Fatal(err)
	}
	p := a.current()
	a.Close()
	var lines, truncated int
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["msg"] != "plugin stderr" {
			continue
		}
		lines++
		if rec["truncated"] == true {
			truncated++
			if n := len(rec["line"].(string)); n != stderrLineLimit {
				t.Errorf("truncated line logged with %d bytes, want %d", n, stderrLineLimit)
			}
		}
		if rec["pid"] != float64(p.pid) || rec["transport"] != "subprocess" {
			t.Errorf("stderr record lacks pid/transport: %v", rec)
		}
	}
	if lines != 201 || truncated != 1 {
		t.Errorf("logged %d stderr lines (%d truncated), want 201 (1 truncated)", lines, truncated)
	}
	if tail := p.stderr.Tail(); len(tail) != DefaultStderrTail+3 || !strings.HasPrefix(tail, "...") {
		t.Errorf("stderr tail is %d bytes, want the last %d plus \"...\"", len(tail), DefaultStderrTail)
	}
}

func TestCloseKillsPluginIgnoringSIGTERMAfterGrace(t *testing.T) {
	const grace = 150 * time.Millisecond
	a := newAgent(t, helperDecl(t, "ignore-term"), WithGracePeriod(grace))
	if _, err := ask(t, a, "x", nil); err != nil {
		t.Fatal(err)
	}
	p := a.current()
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < grace {
		t.Errorf("Close returned after %v, before the %v grace period", took, grace)
	}
	select {
	case <-p.exited:
	default:
		t.Fatal("Close returned before the plugin was reaped")
	}
	if p.state.ExitCode() != -1 || !strings.Contains(p.state.String(), "killed") {
		t.Errorf("plugin ended with %v, want killed", p.state)
	}
	_, err := ask(t, a, "y", nil)
	wantAskError(t, err, agent.KindPluginCrash, "subprocess agent: agent is closed")
}

func TestCloseStopsWellBehavedPluginPromptly(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	if err := a.Close(); err != nil { // never spawned
		t.Fatal(err)
	}
	a = newAgent(t, helperDecl(t, "echo"))
	if _, err := ask(t, a, "x", nil); err != nil {
		t.Fatal(err)
	}
	p := a.current()
	start := time.Now()
	a.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("closing a plugin that exits on SIGTERM took %v", took)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(p.pid)); err == nil && !zombie(p.pid) {
		t.Errorf("plugin %d still runs after Close", p.pid)
	}
}

func TestSpawnFailure(t *testing.T) {
	a := newAgent(t, agent.Declaration{Alias: "agent.x", Command: "/nonexistent/plugin"})
	_, err := ask(t, a, "x", nil)
	wantAskError(t, err, agent.KindPluginCrash, `subprocess agent: spawn "/nonexistent/plugin": fork/exec /nonexistent/plugin: no such file or directory`)
}

func TestContextDoneBeforeCall(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.Ask(ctx, agent.NewCall(&agent.AskRequest{}))
	wantAskError(t, err, agent.KindDeadlineExceeded, "subprocess agent: context done before the call: context canceled")
	if a.currentPID() != 0 {
		t.Error("a dead context spawned the plugin")
	}
}

func TestBuildNeverSpawns(t *testing.T) {
	r := agent.NewRegistry(nil)
	r.RegisterTransport(agent.PluginSubprocess, Build)
	r.Configure(map[string]agent.Declaration{"agent.echo": helperDecl(t, "echo")})
	got, err := r.Get("agent.echo")
	if err != nil {
		t.Fatal(err)
	}
	if pid := got.(*Agent).currentPID(); pid != 0 {
		t.Fatalf("building the agent spawned pid %d", pid)
	}
	if _, err := got.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Prompt: "x"})); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(agent.Declaration{Alias: "agent.bad"}); err == nil || err.Error() != "agent_plugins.agent.bad: subprocess plugin requires command:" {
		t.Errorf("New without command: %v", err)
	}
}

// TestCrashRespawnCyclesLeakNothing runs 200 crash/respawn cycles and counts
// this process's file descriptors and child processes before and after.
// The plugin is a shell one-liner: a race-enabled test binary takes far
// longer to start, and the lifecycle under test is the same.
func TestCrashRespawnCyclesLeakNothing(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to count descriptors and processes")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs sh")
	}
	const cycles = 200
	a := newAgent(t, agent.Declaration{Alias: "agent.crashy", Command: sh,
		Args: []string{"-c", "read line; echo dying >&2; exit 3"}})
	_, _ = ask(t, a, "warm-up", nil) // first use may open runtime descriptors
	time.Sleep(100 * time.Millisecond)
	fds, kids := countFDs(t), countChildren(t)
	for i := range cycles {
		_, err := ask(t, a, "x", nil)
		wantAskError(t, err, agent.KindPluginCrash, `subprocess agent: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "dying\n"`)
		if t.Failed() {
			t.Fatalf("cycle %d", i)
		}
	}
	// Descriptors of the last crash close just after its Ask returns.
	settled := func() bool { return countChildren(t) <= kids && countFDs(t) <= fds }
	for deadline := time.Now().Add(5 * time.Second); !settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := countChildren(t); got > kids {
		t.Errorf("%d child processes after %d cycles, %d before", got, cycles, kids)
	}
	if got := countFDs(t); got > fds {
		t.Errorf("%d open descriptors after %d cycles, %d before", got, cycles, fds)
	}
}

// TestNoPluginOutlivesKitsoki kills a kitsoki stand-in with SIGKILL and
// checks its plugin dies with it (Pdeathsig).
func TestNoPluginOutlivesKitsoki(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("Linux only")
	}
	exe, _ := os.Executable()
	host := exec.Command(exe)
	host.Env = append(os.Environ(), helperEnv+"=host")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		host.Process.Kill()
		host.Wait()
		t.Fatalf("host printed no plugin pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	host.Process.Kill()
	host.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(err, os.ErrNotExist) || zombie(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
	t.Fatalf("plugin %d outlived its killed host", pid)
}

func countFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// countChildren counts processes (zombies included) whose parent is us.
func countChildren(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so cut at ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == self {
			n++
		}
	}
	return n
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// TestPythonExamplePlugin runs examples/plugins/echo-py, a plugin written
// with the Python standard library only.
func TestPythonExamplePlugin(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: skipping the Python example plugin")
	}
	script, _ := filepath.Abs("../../../examples/plugins/echo-py/echo_plugin.py")
	a := newAgent(t, agent.Declaration{Alias: "agent.py", Command: py, Args: []string{script}})
	resp, err := ask(t, a, "x", map[string]any{"answer": `{"decision":"approve","n":[1,2]}`})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Submission); got != `{"decision":"approve","n":[1,2]}` {
		t.Errorf("submission %s", got)
	}
	_, err = ask(t, a, "x", map[string]any{"fail": "no model"})
	wantAskError(t, err, agent.KindPluginCrash, "subprocess agent: rpc error -32000: no model")
	// A slow call does not hold up a quick one: the quick call, sent while
	// the slow one sleeps in the plugin, is answered before it. The slow
	// call sleeps far longer than a quick round trip takes even on a loaded
	// machine, and the order is checked on a flag, not on clock readings.
	var wg sync.WaitGroup
	var slowDone atomic.Bool
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(started)
		if _, err := ask(t, a, "slow", map[string]any{"sleep_ms": 2000}); err != nil {
			t.Error(err)
		}
		slowDone.Store(true)
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // let the slow request go out first
	if _, err := ask(t, a, "quick", nil); err != nil {
		t.Fatal(err)
	}
	quickFirst := !slowDone.Load()
	wg.Wait()
	if !quickFirst {
		t.Error("the quick call waited for the slow one")
	}
}

func TestCallOtherMethod(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	_, err := a.Call(context.Background(), "agent.unknown", map[string]any{"name": "x"})
	ae, _ := agent.AsAskError(err)
	if ae == nil || ae.Kind != agent.KindPluginCrash || !strings.HasPrefix(ae.Detail, `subprocess agent: rpc error -32601: method "agent.unknown" not found`) {
		t.Errorf("Call of an unknown method: %v", err)
	}
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != plugin.CodeMethodNotFound {
		t.Errorf("the JSON-RPC error is not recoverable from %v", err)
	}
	raw, err := a.Call(context.Background(), plugin.MethodAsk, &agent.AskRequest{With: map[string]any{"answer": 7}})
	if err != nil || string(raw) != `{"submission":7,"meta":{"agent":"echo","prompt_bytes":0}}` {
		t.Errorf("Call(agent.ask) = %s, %v", raw, err)
	}
}
