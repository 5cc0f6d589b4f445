package host

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestResult: the bind data of an agent call in its two shapes (the
// built-in claude path, story-format.md §9, and a plugin's) and of a
// failure.
func TestResult(t *testing.T) {
	failed := agent.Errorf(agent.KindSchemaInvalid, "/decision: enum")
	meta := map[string]any{"result": "because", "session_id": "cs-1"}
	tests := []struct {
		name       string
		alias      string
		verb       string
		ans        answer
		want       map[string]any
		wantCallID string
	}{
		{name: "plugin", alias: "agent.x", verb: plugin.VerbDecide,
			ans:  answer{resp: &agent.AskResponse{Meta: map[string]any{"c": 1}}, submission: "s"},
			want: map[string]any{"submission": "s", "submitted": "s", "meta": map[string]any{"c": 1}, "ok": true, "exit_code": 0}},
		{name: "plugin without meta", alias: "agent.x", verb: plugin.VerbAsk,
			ans:  answer{resp: &agent.AskResponse{}, submission: nil},
			want: map[string]any{"submission": nil, "submitted": nil, "meta": nil, "ok": true, "exit_code": 0}},
		{name: "built-in decide", verb: plugin.VerbDecide,
			ans: answer{resp: &agent.AskResponse{Meta: meta}, submission: "s"},
			want: map[string]any{"submitted": "s", "rationale": "because", "claude_session_id": "cs-1", "exit_code": 0, "ok": true,
				"meta": meta}},
		{name: "built-in task, exit code as a JSON number", verb: plugin.VerbTask,
			ans: answer{resp: &agent.AskResponse{Meta: map[string]any{"result": "out", "exit_code": float64(3)}}, submission: "s"},
			want: map[string]any{"submitted": "s", "stdout": "out", "exit_code": 3, "ok": false,
				"meta": map[string]any{"result": "out", "exit_code": float64(3)}}},
		{name: "built-in ask, exit code int64", verb: plugin.VerbAsk,
			ans: answer{resp: &agent.AskResponse{Meta: map[string]any{"exit_code": int64(1)}}},
			want: map[string]any{"submitted": nil, "stdout": nil, "exit_code": 1, "ok": false,
				"meta": map[string]any{"exit_code": int64(1)}}},
		{name: "built-in converse, exit code int", verb: plugin.VerbConverse,
			ans: answer{resp: &agent.AskResponse{Meta: map[string]any{"exit_code": 0, "result": "hi"}}, submission: "hi"},
			want: map[string]any{"submitted": "hi", "stdout": "hi", "exit_code": 0, "ok": true,
				"meta": map[string]any{"exit_code": 0, "result": "hi"}}},
		{name: "built-in without meta", verb: plugin.VerbDecide,
			ans:  answer{resp: &agent.AskResponse{}, submission: "s"},
			want: map[string]any{"submitted": "s", "rationale": nil, "claude_session_id": nil, "exit_code": 0, "ok": true, "meta": nil}},
		{name: "failure with the response's meta", alias: "agent.x", verb: plugin.VerbDecide,
			ans:        answer{resp: &agent.AskResponse{Meta: map[string]any{"tokens": 3}}, err: failed},
			want:       map[string]any{"ok": false, "exit_code": 1, "error": failed.Error(), "meta": map[string]any{"tokens": 3}},
			wantCallID: "cid"},
		{name: "failure of the built-in path without a response", verb: plugin.VerbDecide,
			ans:        answer{err: failed},
			want:       map[string]any{"ok": false, "exit_code": 1, "error": failed.Error()},
			wantCallID: "cid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stepCall(tt.alias)
			c.verb = tt.verb
			res := c.result(tt.ans)
			if diff := cmp.Diff(tt.want, res.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if res.CallID != tt.wantCallID {
				t.Errorf("call_id = %q, want %q", res.CallID, tt.wantCallID)
			}
			if (res.Err != nil) != (tt.ans.err != nil) || (res.Err != nil && res.Err != error(tt.ans.err)) {
				t.Errorf("Err = %v, want %v", res.Err, tt.ans.err)
			}
		})
	}
}
