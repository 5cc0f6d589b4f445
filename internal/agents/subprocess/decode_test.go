package subprocess

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/wirecheck"
)

var replyLines = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"submission":{"decision":"approve","reason":"within policy","confidence":0.9},"meta":{"agent":"echo","prompt_bytes":1024}}}`,
	`{"jsonrpc":"2.0","id":2,"result":{}}`,
	`{"jsonrpc":"2.0","id":3,"result":{"submission":"caf\u00e9 \"x\""}}`,
	` { "result" : { "meta" : { "n" : [1, 2.5, null, {"a": false}] } , "submission" : [ ] } , "id" : 40 } `,
	`{"id":5,"result":{"meta":{"k":1,"k":2}}}`,
	// Left to encoding/json.
	`{"jsonrpc":"2.0","id":6,"result":{"submission":1,"sub_events":[]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"transcript":{"format":"x","events":[]}}}`,
	`{"jsonrpc":"2.0","id":8,"result":{"Submission":1}}`,
	`{"jsonrpc":"2.0","id":9,"result":{"submission":null}}`,
	`{"jsonrpc":"2.0","id":10,"result":{"meta":null}}`,
	`{"jsonrpc":"2.0","id":11,"result":null}`,
	`{"jsonrpc":"2.0","id":12,"result":[1]}`,
	`{"jsonrpc":"2.0","id":13,"error":{"code":-1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":14,"result":{},"error":null}`,
	`{"jsonrpc":"2.0","id":15,"method":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":"16","result":{}}`,
	`{"jsonrpc":"2.0","id":17,"result":{"submission":1,"submission":2}}`,
	`{"jsonrpc":"2.0","id":18,"result":{"meta":{"n":1e400}}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":19,"result":{}}x`,
	`{"jsonrpc":"2.0","id":20,"result":{"submission":tru}}`,
}

// The one-pass decoder takes the usual agent.ask response, and agrees
// with encoding/json on every line it takes.
func TestAskReplyFastAgreesWithEncodingJSON(t *testing.T) {
	wirecheck.Taken(t, replyLines, 5, checkAskReply) // the lines above the comment
}

func checkAskReply(t *testing.T, line string) bool {
	t.Helper()
	id, fast, ok := askReplyFast([]byte(line))
	if !ok {
		return false
	}
	var env askEnvelope
	if err := json.Unmarshal([]byte(line), &env); err != nil || env.Result == nil || env.Method != nil || env.Error != nil {
		t.Errorf("%.80q: the one-pass decoder took a line encoding/json does not read as a result (%v)", line, err)
		return true
	}
	if id != string(env.ID) {
		t.Errorf("%.80q: id %q, encoding/json %q", line, id, env.ID)
	}
	if diff := cmp.Diff(env.Result, fast); diff != "" {
		t.Errorf("%.80q (-encoding/json +one pass):\n%s", line, diff)
	}
	return true
}

func FuzzAskReplyFast(f *testing.F) { wirecheck.Fuzz(f, replyLines, checkAskReply) }
