package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// fuzzAgent echoes the prompt, fails, panics or returns a result that
// cannot be encoded, on request; its one tool echoes its arguments. It
// never waits, so a run does not depend on timing.
type fuzzAgent struct{}

func (fuzzAgent) Ask(_ context.Context, req *AskRequest) (*AskResponse, error) {
	switch req.Prompt {
	case "fail":
		return nil, errors.New("model unavailable")
	case "coded":
		return nil, &Error{Code: -32042, Message: "quota", Data: map[string]any{"retry_after": 3}}
	case "panic":
		panic("boom")
	case "nil":
		return nil, nil
	case "nan":
		return &AskResponse{Meta: map[string]any{"cost": math.NaN()}}, nil
	}
	b, _ := json.Marshal(req.Prompt)
	return &AskResponse{Submission: b, Meta: map[string]any{"verb": req.Verb}}, nil
}

func (fuzzAgent) InvokeAgentTool(_ context.Context, req *AgentToolRequest) (*AgentToolResult, error) {
	if req.Name == "panic" {
		panic("tool boom")
	}
	return &AgentToolResult{Text: req.Name, StructuredContent: req.Arguments}, nil
}

// FuzzServeConn runs the SDK's request loop over arbitrary input (what
// kitsoki writes to a plugin's stdin). It must return once the input ends
// (an error only when the last line is torn), and every line it writes
// must be one JSON-RPC 2.0 response: each request with an id answered
// exactly once under that id, each unreadable line with a null-id parse
// error, notifications never.
func FuzzServeConn(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		var out testkit.SyncBuffer // the plugin's stdout
		err := ServeConn(context.Background(), bytes.NewReader(in), &out, fuzzAgent{})

		// What the input asks for, line by line as LineStream reads it.
		var wantIDs []string
		wantNull, torn := 0, false
		for line := range bytes.Lines(in) {
			if line[len(line)-1] != '\n' {
				torn = len(bytes.TrimSpace(line)) > 0
				break
			}
			line = line[:len(line)-1]
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if !utf8.Valid(line) {
				wantNull++
				continue
			}
			req, perr := parseRequest(line)
			switch {
			case perr != nil:
				wantNull++
			case isNull(req.ID):
			default:
				wantIDs = append(wantIDs, string(req.ID))
			}
		}
		if (err != nil) != torn {
			t.Fatalf("ServeConn returned %v; the input's last line is torn: %v", err, torn)
		}

		var gotIDs []string
		gotNull := 0
		for line := range bytes.Lines([]byte(out.String())) {
			var resp map[string]json.RawMessage
			if err := json.Unmarshal(line, &resp); err != nil {
				t.Fatalf("output line is not a JSON object: %v: %q", err, line)
			}
			id, hasID := resp["id"]
			_, hasResult := resp["result"]
			rawErr, hasErr := resp["error"]
			if string(resp["jsonrpc"]) != `"2.0"` || !hasID || hasResult == hasErr || len(resp) != 3 {
				t.Fatalf("output line is not a JSON-RPC 2.0 response: %q", line)
			}
			if hasErr {
				var e struct {
					Code    *int64  `json:"code"`
					Message *string `json:"message"`
				}
				if json.Unmarshal(rawErr, &e) != nil || e.Code == nil || e.Message == nil {
					t.Fatalf("error response without code and message: %q", line)
				}
			}
			if isNull(id) {
				gotNull++
			} else {
				gotIDs = append(gotIDs, string(id))
			}
		}
		sort.Strings(wantIDs)
		sort.Strings(gotIDs)
		if diff := cmp.Diff(wantIDs, gotIDs); diff != "" {
			t.Fatalf("answered ids (-want +got):\n%s\noutput:\n%s", diff, out.String())
		}
		if gotNull != wantNull {
			t.Fatalf("%d null-id responses, want %d (one per unreadable line):\n%s", gotNull, wantNull, out.String())
		}
	})
}
