package subprocess

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agent"
)

// TestIncomingMessages pins how each kind of line a plugin may write is
// taken: which end the call and kill the plugin, which keep it.
func TestIncomingMessages(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		kind       agent.ErrorKind // "" → the call succeeds
		detail     string
		kept       bool // the process survives
	}{
		{name: "result with a null error", line: `{"jsonrpc":"2.0","id":$ID,"result":{"submission":1},"error":null}`, kept: true},
		{name: "null result", line: `{"jsonrpc":"2.0","id":$ID,"result":null}`, kept: true,
			kind: agent.KindPluginCrash, detail: "subprocess agent: unmarshal AskResponse: result is null, want an object"},
		{name: "error with data", line: `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000,"message":"busy","data":{"retry":true}}}`, kept: true,
			kind: agent.KindPluginCrash, detail: "subprocess agent: rpc error -32000: busy"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"log","params":{"msg":"hi"}}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: plugin sent a notification (method "log") but may only send responses; plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "neither request nor response", line: `{"jsonrpc":"2.0","id":$ID}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: message is neither a request nor a response (no method, result or error) (line: "{\"jsonrpc\":\"2.0\",\"id\":1}"); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "bad error object", line: `{"jsonrpc":"2.0","id":$ID,"error":{"code":"x","message":"m"}}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: json: cannot unmarshal string into Go struct field Error.code of type int64 (line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}"); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":$ID,"result":{}}]`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: json: cannot unmarshal array into Go value of type subprocess.envelope (line: "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]"); plugin killed by kitsoki (signal: killed); no stderr output`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decl := helperDecl(t, "say")
			decl.Env["KITSOKI_TEST_LINE"] = tc.line
			a := newAgent(t, decl)
			resp, err := ask(t, a, "x", nil)
			if tc.kind == "" {
				if err != nil || string(resp.Submission) != "1" {
					t.Fatalf("Ask = %+v, %v; want submission 1", resp, err)
				}
			} else {
				wantAskError(t, err, tc.kind, tc.detail)
			}
			if alive := a.current().alive(); alive != tc.kept {
				t.Errorf("process alive = %v, want %v", alive, tc.kept)
			}
		})
	}
}
