package eval

import (
	"testing"
)

// Every comparator of eval-format.md §4, passing and failing, with its
// failure reason.
func TestCompare(t *testing.T) {
	exp := map[string]any{"decision": "approve", "reason": "ok", "confidence": 1}
	tests := []struct {
		name   string
		spec   Comparator
		expect map[string]any
		actual any
		want   Outcome
	}{
		{"exact equal after JSON normalisation", Comparator{Kind: "exact"}, exp,
			map[string]any{"decision": "approve", "reason": "ok", "confidence": 1.0}, Outcome{Pass: true}},
		{"exact extra key", Comparator{Kind: "exact"}, exp,
			map[string]any{"decision": "approve", "reason": "ok", "confidence": 1, "x": 1}, Outcome{Reason: "actual does not exactly match expected"}},
		{"exact int vs string", Comparator{Kind: "exact"}, map[string]any{"n": 1}, map[string]any{"n": "1"},
			Outcome{Reason: "actual does not exactly match expected"}},

		{"field_subset", Comparator{Kind: "field_subset"}, map[string]any{"decision": "approve", "meta": map[string]any{"a": 1}},
			map[string]any{"decision": "approve", "reason": "x", "meta": map[string]any{"a": 1, "b": 2}}, Outcome{Pass: true}},
		{"field_subset missing key", Comparator{Kind: "field_subset"}, map[string]any{"decision": "approve", "reason": "ok"},
			map[string]any{"decision": "approve"}, Outcome{Reason: "actual does not contain expected field subset"}},
		{"field_subset nested mismatch", Comparator{Kind: "field_subset"}, map[string]any{"meta": map[string]any{"a": 1}},
			map[string]any{"meta": map[string]any{"a": 2}}, Outcome{Reason: "actual does not contain expected field subset"}},
		{"field_subset list prefix by index", Comparator{Kind: "field_subset"}, map[string]any{"tags": []any{"a", map[string]any{"k": 1}}},
			map[string]any{"tags": []any{"a", map[string]any{"k": 1, "j": 2}, "c"}}, Outcome{Pass: true}},
		{"field_subset list longer than actual", Comparator{Kind: "field_subset"}, map[string]any{"tags": []any{"a", "b"}},
			map[string]any{"tags": []any{"a"}}, Outcome{Reason: "actual does not contain expected field subset"}},
		{"field_subset list order matters", Comparator{Kind: "field_subset"}, map[string]any{"tags": []any{"b"}},
			map[string]any{"tags": []any{"a", "b"}}, Outcome{Reason: "actual does not contain expected field subset"}},
		{"field_subset actual not an object", Comparator{Kind: "field_subset"}, map[string]any{"a": 1}, "text",
			Outcome{Reason: "actual does not contain expected field subset"}},

		{"artifact_diff", Comparator{Kind: "artifact_diff"}, map[string]any{"files": []any{"main.go"}},
			map[string]any{"files": []any{"main.go", "x.go"}, "result": "fixed"}, Outcome{Pass: true}},
		{"artifact_diff mismatch", Comparator{Kind: "artifact_diff"}, map[string]any{"files": []any{"main.go"}},
			map[string]any{"files": []any{"x.go"}}, Outcome{Reason: "artifact does not match expected accepted subset"}},

		{"enum field", Comparator{Kind: "enum", Field: "decision"}, exp, map[string]any{"decision": "approve", "reason": "other"}, Outcome{Pass: true}},
		{"enum field mismatch", Comparator{Kind: "enum", Field: "decision"}, exp, map[string]any{"decision": "reject"},
			Outcome{Reason: `field "decision" got reject want approve`}},
		{"enum field absent from actual", Comparator{Kind: "enum", Field: "decision"}, exp, map[string]any{},
			Outcome{Reason: `field "decision" got <nil> want approve`}},
		{"enum single key", Comparator{Kind: "enum"}, map[string]any{"tone": "formal"}, map[string]any{"tone": "formal", "text": "hi"}, Outcome{Pass: true}},
		{"enum fallback order intent first", Comparator{Kind: "enum"}, map[string]any{"status": "open", "intent": "buy", "x": 1},
			map[string]any{"intent": "sell", "status": "open"}, Outcome{Reason: `field "intent" got sell want buy`}},
		{"enum fallback verdict", Comparator{Kind: "enum"}, map[string]any{"verdict": "ok", "decision": "a"},
			map[string]any{"verdict": "ok"}, Outcome{Pass: true}},
		{"enum fallback decision before status", Comparator{Kind: "enum"}, map[string]any{"status": "s", "decision": "a"},
			map[string]any{"decision": "b", "status": "s"}, Outcome{Reason: `field "decision" got b want a`}},
		{"enum fallback status", Comparator{Kind: "enum"}, map[string]any{"status": "done", "note": "n"},
			map[string]any{"status": "done"}, Outcome{Pass: true}},
		{"enum needs a field", Comparator{Kind: "enum"}, map[string]any{"a": 1, "b": 2}, map[string]any{"a": 1, "b": 2},
			Outcome{Reason: "enum comparator needs a field or single expected key"}},
		{"enum compares fmt strings of numbers", Comparator{Kind: "enum", Field: "n"}, map[string]any{"n": 2}, map[string]any{"n": 2.0}, Outcome{Pass: true}},

		{"judge never passes offline", Comparator{Kind: "judge"}, exp, exp,
			Outcome{Reason: "judge comparator is live-gated and has no deterministic offline result"}},
		{"unknown kind", Comparator{Kind: "fuzzy"}, exp, exp, Outcome{Reason: `unsupported comparator "fuzzy"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compare(tt.spec, tt.expect, tt.actual); got != tt.want {
				t.Errorf("Compare = %+v, want %+v", got, tt.want)
			}
		})
	}
}
