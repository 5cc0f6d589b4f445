package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/wirecheck"
)

var requestLines = []string{
	`{"jsonrpc":"2.0","id":1,"method":"agent.ask","params":{"session_id":"s","turn":3,"state_path":"review","verb":"decide","prompt":"Is this \"in policy\"?\n\u00e9","schema":{"type":"object","required":["a"]},"with":{"answer":"{\"a\":1}","n":2.5,"list":[1,"x",null,true],"obj":{"k":{}}},"world":{"vars":{"x":1,"y":[]}},"deadline":"2026-01-01T00:00:00Z","call_id":"0123456789abcdef"}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"agent.ask","params":{}}`,
	` { "params" : { "prompt" : "x" , "world" : { } } , "method" : "agent.ask" , "id" : -7 } `,
	`{"id":12,"method":"agent.ask","params":{"turn":-0,"with":{},"world":{"vars":{}}}}`,
	`{"id":1e3,"method":"agent.ask","params":{"prompt":"big id"}}`,
	`{"id":1,"method":"agent.ask","params":{"schema":  [ 1, {"a" : "b"} ] }}`,
	`{"id":1,"method":"agent.ask","params":{"with":{"a":1,"a":2}}}`,
	`{"id":1,"method":"agent.tell","params":{"prompt":"other method"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"agent.ask","params":{"session_id":"bench","turn":1,"state_path":"review","verb":"decide","prompt":"p","with":null,"world":{"vars":null},"deadline":"","call_id":""}}`,
	// Left to encoding/json, which decodes them (or refuses them) its way.
	`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`,
	`{"id":1,"method":"agent.ask","params":{"Prompt":"case"}}`,
	`{"id":1,"method":"agent.ask","params":{"prompt":"a","prompt":"b"}}`,
	`{"id":1,"method":"agent.ask","params":{"turn":1.5}}`,
	`{"id":1,"method":"agent.ask","params":{"turn":"one"}}`,
	`{"id":1,"method":"agent.ask","params":{"prompt":null}}`,
	`{"id":1,"method":"agent.ask","params":{"schema":null}}`,
	`{"id":1,"method":"agent.ask","params":{"with":{"n":1e400}}}`,
	`{"id":1,"method":"agent.ask","params":{"prompt":"\ud800"}}`,
	`{"id":1,"method":"agent.ask","params":{"world":{"Vars":{}}}}`,
	`{"id":null,"method":"agent.ask","params":{}}`,
	`{"id":{"x":1},"method":"agent.ask","params":{}}`,
	`{"id":1,"method":"agent.ask","params":[]}`,
	`{"id":1,"method":"agent.ask","params":{}} trailing`,
	`{"id":1,"method":"agent.ask","extra":true,"params":{}}`,
	`{"id":1,"method":"agent.ask","params":{"prompt":"x"}`,
	`not json`,
}

// The one-pass decoder takes the usual agent.ask line, and agrees with
// encoding/json on every line it takes.
func TestParseRequestFastAgreesWithEncodingJSON(t *testing.T) {
	wirecheck.Taken(t, requestLines, 9, checkParseRequest) // the lines above the comment
}

// checkParseRequest compares parseRequestFast with encoding/json on line
// and reports whether the fast decoder took it.
func checkParseRequest(t *testing.T, line string) bool {
	t.Helper()
	fast, ok := parseRequestFast([]byte(line))
	if !ok {
		return false
	}
	std, err := parseRequestStandard([]byte(line))
	if err != nil || std.paramsErr != nil {
		t.Errorf("%.80q: the one-pass decoder took a line encoding/json refuses (%v, %v)", line, err, std.paramsErr)
		return true
	}
	type decoded struct {
		ID     string
		Method string
		Params *AskRequest
	}
	want := decoded{string(std.ID), std.Method, std.Params}
	got := decoded{string(fast.ID), fast.Method, fast.Params}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%.80q (-encoding/json +one pass):\n%s", line, diff)
	}
	return true
}

func FuzzParseRequestFast(f *testing.F) { wirecheck.Fuzz(f, requestLines, checkParseRequest) }

// An id is kept as its own bytes, as encoding/json keeps a RawMessage.
func TestParseRequestFastKeepsTheID(t *testing.T) {
	req, ok := parseRequestFast([]byte(`{"id": "a\u0062" ,"method":"agent.ask","params":{}}`))
	if !ok {
		t.Fatal("not taken")
	}
	if got := string(req.ID); got != `"a\u0062"` {
		t.Errorf("id = %s", got)
	}
	var want json.RawMessage = []byte(`"a\u0062"`)
	if diff := cmp.Diff(want, req.ID); diff != "" {
		t.Error(diff)
	}
}

// Every request as kitsoki encodes it is decoded in one pass.
func TestParseRequestFastTakesWhatKitsokiSends(t *testing.T) {
	for _, p := range []AskRequest{
		{},
		{SessionID: "s", Turn: 2, StatePath: "a.b", Verb: VerbDecide, Prompt: strings.Repeat("<é>\t", 300),
			Schema: json.RawMessage(`{"type":"object"}`), With: map[string]any{"answer": `{"a":1}`, "n": 3},
			World: World{Vars: map[string]any{"x": []any{1, "y"}}}, Deadline: "2026-01-01T00:00:00Z", CallID: "c"},
	} {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		line := `{"jsonrpc":"2.0","id":7,"method":"agent.ask","params":` + string(b) + `}`
		if !checkParseRequest(t, line) {
			t.Errorf("%.120s: not decoded in one pass", line)
		}
	}
}
