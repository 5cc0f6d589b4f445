package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// toolAgent serves agent tools: "echo" answers with the request, "wait"
// blocks until cancelled and reports the cancellation on cancelled.
type toolAgent struct {
	cancelled chan string
}

func (toolAgent) Ask(_ context.Context, req *AskRequest) (*AskResponse, error) {
	return Submit(req.Prompt)
}

func (a toolAgent) InvokeAgentTool(ctx context.Context, req *AgentToolRequest) (*AgentToolResult, error) {
	switch req.Name {
	case "echo":
		return &AgentToolResult{Text: "hi " + req.Context.TaskID, StructuredContent: map[string]any{
			"args": req.Arguments, "id": req.InvocationID, "surface": req.Context.Surface}}, nil
	case "wait":
		<-ctx.Done()
		a.cancelled <- req.InvocationID
		return nil, ctx.Err()
	case "panic":
		panic("tool boom")
	case "nil":
		return nil, nil
	case "failed":
		return &AgentToolResult{Text: "no such tag", IsError: true}, nil
	}
	return nil, Errorf("unknown tool %q", req.Name)
}

// unimplementedAgent embeds the SDK's base.
type unimplementedAgent struct {
	UnimplementedAgentToolPlugin
}

func (unimplementedAgent) Ask(_ context.Context, req *AskRequest) (*AskResponse, error) {
	return Submit(req.Prompt)
}

// serveAgent runs ServeConn with a on pipes; the loop must have returned
// when the test ends.
func serveAgent(t *testing.T, a Agent) (send func(string), recv func() string) {
	t.Helper()
	send, recv, stop := onPipes(t, "ServeConn", func(ctx context.Context, r io.Reader, w io.Writer) error {
		return ServeConn(ctx, r, w, a)
	})
	t.Cleanup(func() { _ = stop() })
	return send, recv
}

func invoke(id, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"agent_tool.invoke","params":{"invocation_id":"inv-%s","name":%q,"arguments":%s,"context":{"task_id":"run-1","session_id":"call-1","workspace_id":"ws","surface":"kanban-task"}}}`+"\n", id, id, name, args)
}

func TestServeConnInvokesAgentTools(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"result", invoke("1", "echo", `{"tag":"x","n":2}`),
			`{"jsonrpc":"2.0","id":1,"result":{"text":"hi run-1","structured_content":{"args":{"n":2,"tag":"x"},"id":"inv-1","surface":"kanban-task"},"is_error":false}}`},
		{"is_error", invoke("2", "failed", `{}`), `{"jsonrpc":"2.0","id":2,"result":{"text":"no such tag","is_error":true}}`},
		{"error", invoke("3", "nope", `{}`), `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"unknown tool \"nope\""}}`},
		{"panic", invoke("4", "panic", `{}`), `{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"agent tool \"panic\" panicked: tool boom"}}`},
		{"nil result", invoke("5", "nil", `{}`), `{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"agent tool \"nil\" returned neither a result nor an error"}}`},
		{"missing params", `{"jsonrpc":"2.0","id":6,"method":"agent_tool.invoke"}` + "\n",
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"agent_tool.invoke: params are missing (want an AgentToolRequest object)"}}`},
		{"bad params", `{"jsonrpc":"2.0","id":7,"method":"agent_tool.invoke","params":{"name":7}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"agent_tool.invoke: params are not an AgentToolRequest: json: cannot unmarshal number into Go struct field AgentToolRequest.params.name of type string"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			send, recv := serveAgent(t, toolAgent{})
			send(tc.in)
			if diff := cmp.Diff(tc.want, recv()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			send(ask("99", "still serving"))
			if got := recv(); got != `{"jsonrpc":"2.0","id":99,"result":{"submission":"still serving"}}` {
				t.Errorf("after the case: %s", got)
			}
		})
	}
}

func TestAgentWithoutToolsAnswersMethodNotFound(t *testing.T) {
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method \"agent_tool.invoke\" not found (this plugin serves no agent tools)"}}`
	for name, a := range map[string]Agent{"no method": testAgent, "unimplemented base": unimplementedAgent{}} {
		t.Run(name, func(t *testing.T) {
			send, recv := serveAgent(t, a)
			send(invoke("1", "echo", `{}`))
			if diff := cmp.Diff(want, recv()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCancelRequestCancelsTheCall(t *testing.T) {
	a := toolAgent{cancelled: make(chan string, 1)}
	send, recv := serveAgent(t, a)
	// The cancellation follows the call at once: it must not overtake it.
	send(invoke("41", "wait", `{}`) + `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":41}}` + "\n")
	select {
	case id := <-a.cancelled:
		if id != "inv-41" {
			t.Errorf("cancelled %s, want inv-41", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("$/cancelRequest did not cancel the call's context")
	}
	if got := recv(); got != `{"jsonrpc":"2.0","id":41,"error":{"code":-32000,"message":"context canceled"}}` {
		t.Errorf("answer of the cancelled call: %s", got)
	}
	// Cancelling an answered or unknown id is ignored.
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":41}}` + "\n" + `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{}}` + "\n")
	send(invoke("42", "echo", `{}`))
	if got := recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":42,"result":{"text":"hi run-1"`) {
		t.Errorf("after stray cancellations: %s", got)
	}
}
