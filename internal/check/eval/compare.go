package eval

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Outcome is a comparator's verdict on one answer.
type Outcome struct {
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
}

// enumFallbackFields are tried, in order, when an enum comparator names no
// field and the expectation has more than one key.
var enumFallbackFields = []string{"intent", "verdict", "decision", "status"}

// Compare scores actual against expect with the comparator spec
// (eval-format.md §4). Both sides are JSON-normalised first, so 1 and 1.0
// are equal and YAML and JSON values compare alike.
func Compare(spec Comparator, expect map[string]any, actual any) Outcome {
	e := normalise(expect)
	a := normalise(actual)
	switch spec.Kind {
	case CompareExact:
		if reflect.DeepEqual(e, a) {
			return Outcome{Pass: true}
		}
		return Outcome{Reason: "actual does not exactly match expected"}
	case CompareFieldSubset:
		if isSubset(e, a) {
			return Outcome{Pass: true}
		}
		return Outcome{Reason: "actual does not contain expected field subset"}
	case CompareArtifactDiff:
		if isSubset(e, a) {
			return Outcome{Pass: true}
		}
		return Outcome{Reason: "artifact does not match expected accepted subset"}
	case CompareEnum:
		em, _ := e.(map[string]any)
		field := spec.Field
		if field == "" {
			field = enumField(em)
		}
		if field == "" {
			return Outcome{Reason: "enum comparator needs a field or single expected key"}
		}
		am, _ := a.(map[string]any)
		want, got := em[field], am[field]
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return Outcome{Pass: true}
		}
		return Outcome{Reason: fmt.Sprintf("field %q got %v want %v", field, got, want)}
	case CompareJudge:
		return Outcome{Reason: "judge comparator is live-gated and has no deterministic offline result"}
	}
	return Outcome{Reason: fmt.Sprintf("unsupported comparator %q", spec.Kind)}
}

// enumField picks the enum field of an expectation with no explicit field:
// its only key, else the first of intent, verdict, decision, status present.
func enumField(expect map[string]any) string {
	if len(expect) == 1 {
		for k := range expect {
			return k
		}
	}
	for _, f := range enumFallbackFields {
		if _, ok := expect[f]; ok {
			return f
		}
	}
	return ""
}

// isSubset reports whether want is contained in got: every key of a
// wanted map present in got and recursively a subset; a wanted list no
// longer than got and element-wise a subset by index; scalars equal.
func isSubset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !isSubset(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(w) > len(g) {
			return false
		}
		for i := range w {
			if !isSubset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// normalise round-trips v through JSON: maps become map[string]any, lists
// []any and numbers float64. A value JSON cannot encode is returned as is.
func normalise(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}
