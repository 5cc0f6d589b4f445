package expr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// testEnv is the scope most tests evaluate against.
func testEnv() Env {
	return Env{
		"world": map[string]any{
			"a":          "b",
			"n":          3,
			"f":          0.85,
			"whole":      40.0,
			"big":        1e21,
			"t":          true,
			"empty":      "",
			"zero":       0,
			"html":       "<a&b>",
			"num":        json.Number("12.50"),
			"amount":     40,
			"auto_limit": 50,
			"verdict":    map[string]any{"decision": "approve", "confidence": 0.9},
			"m":          map[string]any{"z": 1, "a": []any{1, "x"}},
			"ymap":       map[any]any{1: "one", "k": map[any]any{true: "yes"}},
			"list":       []any{map[string]any{"name": "x", "tags": []any{"p", "q"}}, map[string]any{"name": "y", "tags": []any{}}},
			"tags":       []any{"red", "green"},
			"strs":       []string{"s1", "s2"},
			"nolist":     []any{},
			"scores":     map[string]any{"b": 2, "a": 1},
			"padded":     "  hi  ",
			"csv":        "a,b,c",
			"neg":        -2.5,
		},
		"slots":  map[string]any{"text": "taxi", "amount": 40},
		"args":   map[string]any{"claim": "lunch"},
		"event":  map[string]any{"type": "turn.start"},
		"run":    map[string]any{"id": "r1", "turn": 3},
		"result": map[string]any{"data": map[string]any{"ok": true}},
		"menu":   []any{"one", "two"},
		"item":   map[string]any{"label": "first"},
		"state":  map[string]any{"path": "review.wait", "description": "Waiting."},
	}
}

// errText returns err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkErr fails unless err's message contains want ("" = no error).
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return err == nil
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to contain %q", errText(err), want)
	}
	return false
}

// position extracts (line, col) from a *CompileError or *EvalError.
func position(t *testing.T, err error) (int, int) {
	t.Helper()
	var ce *CompileError
	if errors.As(err, &ce) {
		return ce.Line, ce.Col
	}
	var ee *EvalError
	if errors.As(err, &ee) {
		return ee.Line, ee.Col
	}
	t.Fatalf("error %v (%T) is neither *CompileError nor *EvalError", err, err)
	return 0, 0
}
