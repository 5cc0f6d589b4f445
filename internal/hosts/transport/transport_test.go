package transport

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

func TestPost(t *testing.T) {
	tests := []struct {
		name    string
		args    []map[string]any // posted in order; the last is checked
		printed string
		data    map[string]any
		err     string
	}{
		{"header and body", []map[string]any{{"thread": "ops", "title": "Deploy", "body": "done"}},
			"[kitsoki] ops · Deploy\ndone\n", map[string]any{"ok": true, "message_id": "ops#1", "duplicate": false}, ""},
		{"no thread", []map[string]any{{"body": "hi\n"}},
			"[kitsoki]\nhi\n", map[string]any{"ok": true, "message_id": "terminal#1", "duplicate": false}, ""},
		{"no marker", []map[string]any{{"body": "hi", "bot_marker": "", "transport": "tui"}},
			"hi\n", map[string]any{"ok": true, "message_id": "terminal#1", "duplicate": false}, ""},
		{"map body as JSON", []map[string]any{{"body": map[string]any{"n": int64(1)}, "bot_marker": "[bot]"}},
			"[bot]\n{\n  \"n\": 1\n}\n", map[string]any{"ok": true, "message_id": "terminal#1", "duplicate": false}, ""},
		{"ids count per thread", []map[string]any{{"thread": "a", "body": "1"}, {"thread": "b", "body": "2"}, {"thread": "a", "body": "3", "bot_marker": ""}},
			"a\n3\n", map[string]any{"ok": true, "message_id": "a#2", "duplicate": false}, ""},
		{"a phase is posted once per thread", []map[string]any{{"thread": "a", "body": "1", "phase_id": "p"}, {"thread": "a", "body": "again", "phase_id": "p"}},
			"", map[string]any{"ok": true, "message_id": "a#1", "duplicate": true}, ""},
		{"other transport refused", []map[string]any{{"transport": "jira", "body": "x"}}, "", map[string]any{"ok": false, "message_id": ""},
			`host.transport.post: with.transport "jira" is not available: kitsoki posts to the terminal only (transport: terminal or tui); serve other transports from a host plugin`},
		{"body required", []map[string]any{{"thread": "a"}}, "", map[string]any{"ok": false, "message_id": ""},
			"host.transport.post: with.body is required: the message"},
		{"unknown key", []map[string]any{{"body": "x", "channel": "c"}}, "", map[string]any{"ok": false, "message_id": ""},
			"host.transport.post: with.channel is not a field of host.transport.post (fields: transport, thread, body, title, phase_id, bot_marker)"},
		{"typed field", []map[string]any{{"body": "x", "title": 3}}, "", map[string]any{"ok": false, "message_id": ""},
			"host.transport.post: with.title must be a string, got int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := New(&out)
			var r *host.Result
			for _, a := range tt.args {
				out.Reset()
				var err error
				if r, err = p.Invoke(context.Background(), &host.Call{Args: a}); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != tt.printed {
				t.Errorf("printed %q, want %q", out.String(), tt.printed)
			}
			if diff := cmp.Diff(tt.data, r.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			got := ""
			if r.Err != nil {
				got = r.Err.Error()
			}
			if got != tt.err {
				t.Errorf("error %q, want %q", got, tt.err)
			}
		})
	}
}

// TestPostWithoutTerminal: a run without an output (a flow) prints nothing
// and still answers.
func TestPostWithoutTerminal(t *testing.T) {
	r, err := New(nil).Invoke(context.Background(), &host.Call{Args: map[string]any{"body": "x"}})
	if err != nil || r.Err != nil || r.Data["message_id"] != "terminal#1" {
		t.Fatalf("%v %v %v", r, err, r.Err)
	}
}
