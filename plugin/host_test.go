package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testHostOps = map[string]HostOp{
	"create": {
		Description: "Open a ticket.",
		ArgsSchema:  json.RawMessage(`{"type":"object","required":["title"]}`),
		Run: func(_ context.Context, req *HostInvokeRequest) (map[string]any, error) {
			return map[string]any{"id": "T-1", "title": req.Args["title"], "call_id": req.Context.CallID, "turn": req.Context.Turn}, nil
		},
	},
	"fail": {Run: func(context.Context, *HostInvokeRequest) (map[string]any, error) {
		return nil, errors.New("tracker down")
	}},
	"coded": {Run: func(context.Context, *HostInvokeRequest) (map[string]any, error) {
		return nil, &Error{Code: -32042, Message: "quota"}
	}},
	"panic": {Run: func(context.Context, *HostInvokeRequest) (map[string]any, error) { panic("boom") }},
	"nil":   {Run: func(context.Context, *HostInvokeRequest) (map[string]any, error) { return nil, nil }},
	"wait": {Run: func(ctx context.Context, _ *HostInvokeRequest) (map[string]any, error) {
		<-ctx.Done()
		return map[string]any{"cancelled": true}, nil
	}},
}

// serveHost runs ServeHostConn with testHostOps on pipes; send adds the
// line's newline. The loop must have returned when the test ends.
func serveHost(t *testing.T) (send func(string), recv func() string) {
	t.Helper()
	sendRaw, recv, stop := onPipes(t, "ServeHostConn", func(ctx context.Context, r io.Reader, w io.Writer) error {
		return ServeHostConn(ctx, r, w, testHostOps)
	})
	t.Cleanup(func() { _ = stop() })
	return func(s string) { sendRaw(s + "\n") }, recv
}

func hostInvoke(id, op string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"host.invoke","params":{"handler":"host.tickets","op":"` + op +
		`","args":{"title":"printer"},"context":{"session_id":"s","turn":4,"state_path":"a","call_id":"c1"}}}`
}

func TestServeHostAnswers(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"data", hostInvoke("1", "create"), `{"jsonrpc":"2.0","id":1,"result":{"data":{"call_id":"c1","id":"T-1","title":"printer","turn":4}}}`},
		{"nil data is {}", hostInvoke("2", "nil"), `{"jsonrpc":"2.0","id":2,"result":{"data":{}}}`},
		{"error", hostInvoke("3", "fail"), `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"tracker down"}}`},
		{"coded error", hostInvoke("4", "coded"), `{"jsonrpc":"2.0","id":4,"error":{"code":-32042,"message":"quota"}}`},
		{"panic", hostInvoke("5", "panic"), `{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"host op \"panic\" panicked: boom"}}`},
		{"unknown op", hostInvoke("6", "reopen"),
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"host.tickets: unknown op \"reopen\" (this plugin answers: coded, create, fail, nil, panic, wait)"}}`},
		{"params missing", `{"jsonrpc":"2.0","id":7,"method":"host.invoke"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"host.invoke: params are missing (want a HostInvokeRequest object)"}}`},
		{"params of the wrong shape", `{"jsonrpc":"2.0","id":8,"method":"host.invoke","params":{"op":3}}`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"host.invoke: params are not a HostInvokeRequest: json: cannot unmarshal number into Go struct field HostInvokeRequest.params.op of type string"}}`},
		{"agent.ask is not a host method", `{"jsonrpc":"2.0","id":9,"method":"agent.ask","params":{}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"method \"agent.ask\" not found (this host plugin answers host.invoke and host.describe)"}}`},
		{"describe", `{"jsonrpc":"2.0","id":10,"method":"host.describe"}`,
			`{"jsonrpc":"2.0","id":10,"result":{"ops":[{"name":"coded"},{"name":"create","description":"Open a ticket.","args_schema":{"type":"object","required":["title"]}},{"name":"fail"},{"name":"nil"},{"name":"panic"},{"name":"wait"}]}}`},
		{"garbage line", `not json`, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			send, recv := serveHost(t)
			send(c.in)
			got := recv()
			if c.want == "" {
				if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`) {
					t.Errorf("got %s, want a parse error with a null id", got)
				}
				return
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("response (-want +got):\n%s", d)
			}
		})
	}
}

// $/cancelRequest cancels a host op's context.
func TestServeHostCancel(t *testing.T) {
	send, recv := serveHost(t)
	send(hostInvoke("1", "wait"))
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	if got, want := recv(), `{"jsonrpc":"2.0","id":1,"result":{"data":{"cancelled":true}}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
