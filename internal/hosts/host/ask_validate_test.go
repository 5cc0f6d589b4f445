package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// TestStepValidate: a submission is validated against the call's schema,
// or without one parsed as JSON and else kept as text; a failure from
// further in is not validated.
func TestStepValidate(t *testing.T) {
	sch := compileSchema(t, `{"type":"object","required":["decision"],"properties":{"decision":{"enum":["approve","reject"]}}}`)
	crash := agent.Errorf(agent.KindPluginCrash, "boom")
	tests := []struct {
		name     string
		schema   bool
		sub      string
		upstream *agent.AskError
		want     any
		wantErr  string
	}{
		{name: "no schema, no submission", want: nil},
		{name: "no schema, JSON", sub: `{"n":1.5,"s":"x"}`, want: map[string]any{"n": 1.5, "s": "x"}},
		{name: "no schema, text", sub: `plain words`, want: "plain words"},
		{name: "valid", schema: true, sub: `{"decision":"approve"}`, want: map[string]any{"decision": "approve"}},
		{name: "invalid", schema: true, sub: `{"decision":"maybe"}`,
			wantErr: "agent: schema_invalid: /decision: enum: value must be one of 'approve', 'reject'"},
		{name: "empty", schema: true, wantErr: "agent: schema_invalid: submission is not valid JSON: empty submission"},
		{name: "not JSON", schema: true, sub: `approve`, wantErr: "agent: schema_invalid: submission is not valid JSON: invalid character 'a' looking for beginning of value"},
		{name: "a failure from further in", schema: true, sub: `{"decision":"maybe"}`, upstream: crash, wantErr: "agent: plugin_crash: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stepCall("agent.x")
			if tt.schema {
				c.schema = sch
			}
			resp := &agent.AskResponse{Submission: json.RawMessage(tt.sub), Meta: map[string]any{"m": 1}}
			sp := &spy{ans: answer{resp: resp, err: tt.upstream}}
			a, err := stepValidate(context.Background(), c, sp.next)
			if err != nil {
				t.Fatal(err)
			}
			if a.resp != resp {
				t.Error("the response was dropped; its meta is bound on failure too")
			}
			if tt.wantErr != "" {
				if a.err == nil || a.err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", a.err, tt.wantErr)
				}
				if a.submission != nil {
					t.Errorf("a failed call has submission %v", a.submission)
				}
				return
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			if diff := cmp.Diff(tt.want, a.submission); diff != "" {
				t.Errorf("submission (-want +got):\n%s", diff)
			}
		})
	}
}
