package subprocess

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

func toolReq(name string, args map[string]any) *plugin.AgentToolRequest {
	return &plugin.AgentToolRequest{InvocationID: "inv-1", Name: name, Arguments: args,
		Context: plugin.AgentToolContext{TaskID: "run-1", SessionID: "call-1", WorkspaceID: "ws", Surface: "kanban-task"}}
}

func TestInvokeToolOnTheAgentsProcess(t *testing.T) {
	a := newAgent(t, helperDecl(t, "echo"))
	if _, err := ask(t, a, "first", nil); err != nil {
		t.Fatal(err)
	}
	pid := a.current().pid
	raw, err := a.InvokeTool(context.Background(), toolReq("echo", map[string]any{"message": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	var res plugin.AgentToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	want := plugin.AgentToolResult{Text: "echo: hi (run run-1, session call-1, kanban-task)", StructuredContent: map[string]any{
		"message": "hi", "invocation_id": "inv-1", "task_id": "run-1", "session_id": "call-1", "workspace_id": "ws", "surface": "kanban-task"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if a.current().pid != pid {
		t.Error("the tool call started another process")
	}
}

func TestInvokeToolMethodNotFoundKeepsCode(t *testing.T) {
	a := newAgent(t, helperDecl(t, "rpc-error")) // answers every request with -32001
	_, err := a.InvokeTool(context.Background(), toolReq("x", nil))
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32001 {
		t.Fatalf("error %v, want the plugin's JSON-RPC error recoverable", err)
	}
}

// TestInvokeToolCancelSendsCancelRequest: when the caller stops waiting,
// the plugin is told which call to drop; a plain Call sends nothing.
func TestInvokeToolCancelSendsCancelRequest(t *testing.T) {
	var logs testkit.SyncBuffer
	a := newAgent(t, helperDecl(t, "log-lines"), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := a.InvokeTool(ctx, toolReq("wait", nil))
	wantAskError(t, err, agent.KindDeadlineExceeded, "subprocess agent: context cancelled waiting for response: context deadline exceeded")
	waitFor(t, "the plugin logs the cancellation", func() bool {
		return strings.Contains(logs.String(), `got: {\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}`)
	})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := a.Call(ctx2, plugin.MethodAsk, &agent.AskRequest{Prompt: "x"}); err == nil {
		t.Fatal("the call was answered")
	}
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(logs.String(), `\"params\":{\"id\":2}`) {
		t.Error("a plain Call sent $/cancelRequest")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// events collects process events.
type events struct {
	mu  sync.Mutex
	evs []ProcessEvent
}

func (e *events) add(ev ProcessEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func (e *events) kinds() []ProcessEventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ProcessEventKind
	for _, ev := range e.evs {
		out = append(out, ev.Kind)
	}
	return out
}

func (e *events) last() ProcessEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.evs[len(e.evs)-1]
}

func TestWatchReportsStartsCrashesAndRespawns(t *testing.T) {
	a := newAgent(t, helperDecl(t, "crash-mid-call"))
	var ev events
	stop := a.Watch(ev.add)
	defer stop()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a start", func() bool { return len(ev.kinds()) == 1 })
	if got := ev.last(); got.Kind != ProcessStarted || got.Seq != 1 || got.PID != a.current().pid {
		t.Errorf("start event %+v", got)
	}
	if _, err := ask(t, a, "boom", nil); err == nil {
		t.Fatal("the crashing call succeeded")
	}
	waitFor(t, "a crash", func() bool { return len(ev.kinds()) == 2 })
	if got := ev.last(); got.Kind != ProcessCrashed || got.Seq != 1 ||
		got.Detail != `subprocess agent: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "helper: about to crash\npanic: model exploded\n"` {
		t.Errorf("crash event %+v", got)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the respawn", func() bool { return len(ev.kinds()) == 3 })
	if got := ev.last(); got.Kind != ProcessStarted || got.Seq != 2 {
		t.Errorf("respawn event %+v", got)
	}
	if err := a.Start(); err != nil { // a live process: nothing to do
		t.Fatal(err)
	}
	a.Close()
	time.Sleep(100 * time.Millisecond)
	if diff := cmp.Diff([]ProcessEventKind{ProcessStarted, ProcessCrashed, ProcessStarted}, ev.kinds()); diff != "" {
		t.Errorf("events (-want +got); Close is not a crash:\n%s", diff)
	}
}

func TestWatchReportsFailedSpawns(t *testing.T) {
	a := newAgent(t, agent.Declaration{Alias: "agent.gone", Command: t.TempDir() + "/no-such-plugin"})
	var ev events
	defer a.Watch(ev.add)()
	if err := a.Start(); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	waitFor(t, "the failure event", func() bool { return len(ev.kinds()) == 1 })
	if got := ev.last(); got.Kind != ProcessSpawnFailed || got.Seq != 1 || !strings.Contains(got.Detail, `subprocess agent: spawn "`) {
		t.Errorf("event %+v", got)
	}
}
