package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTreeEval(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		want    any
		literal bool
	}{
		{
			name: "with block",
			in: map[string]any{
				"agent":  "auditor",
				"prompt": "prompts/audit.md",
				"args": map[string]any{
					"claim":  "{{ world.a }}",
					"amount": "{{ slots.amount }}",
					"label":  "claim: {{ args.claim }}",
					"list":   []any{"{{ world.n }}", 2, "x", nil, true},
				},
			},
			want: map[string]any{
				"agent":  "auditor",
				"prompt": "prompts/audit.md",
				"args": map[string]any{
					"claim":  "b",
					"amount": 40,
					"label":  "claim: lunch",
					"list":   []any{3, 2, "x", nil, true},
				},
			},
		},
		{
			name:    "literal",
			in:      map[string]any{"a": "world.a", "b": []any{1, "two"}},
			want:    map[string]any{"a": "world.a", "b": []any{1, "two"}},
			literal: true,
		},
		{name: "bare string", in: "{{ world.verdict.decision }}", want: "approve"},
		{name: "scalar", in: 7, want: 7, literal: true},
		{name: "nil", in: nil, want: nil, literal: true},
		{
			name: "YAML-style map[any]any and typed slices",
			in:   map[any]any{"k": []string{"{{ world.a }}", "y"}, 1: "one"},
			want: map[string]any{"k": []any{"b", "y"}, "1": "one"},
		},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := CompileTree(tt.in)
			if err != nil {
				t.Fatalf("CompileTree: %v", err)
			}
			if tr.IsLiteral() != tt.literal {
				t.Errorf("IsLiteral() = %v, want %v", tr.IsLiteral(), tt.literal)
			}
			got, err := tr.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Eval mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The caller may modify what Eval returns (the runtime adds "call" to with
// maps): later evaluations must not see it.
func TestTreeEvalReturnsFreshValues(t *testing.T) {
	tr, err := CompileTree(map[string]any{"a": "x", "l": []any{"y"}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := tr.Eval(nil)
	first.(map[string]any)["call"] = "audit"
	first.(map[string]any)["a"] = "overwritten"
	first.(map[string]any)["l"].([]any)[0] = "changed"
	second, _ := tr.Eval(nil)
	want := map[string]any{"a": "x", "l": []any{"y"}}
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("second Eval saw the first result's changes (-want +got):\n%s", diff)
	}
}

func TestTreeErrors(t *testing.T) {
	_, err := CompileTree(map[string]any{"args": map[string]any{"list": []any{"ok", "{{ nope }}"}}})
	checkErr(t, err, `args.list[1]: col 4: unknown name "nope"`)
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Col != 4 {
		t.Errorf("compile error does not unwrap to a *CompileError with Col 4: %v", err)
	}

	tr, err := CompileTree(map[string]any{"args": map[string]any{"list": []any{"ok", "{{ world.x.y }}"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Eval(testEnv())
	checkErr(t, err, "args.list[1]: col 12: cannot fetch y from <nil>")
	var ee *EvalError
	if !errors.As(err, &ee) {
		t.Errorf("eval error does not unwrap to an *EvalError: %v", err)
	}

	tr, err = CompileTree([]any{map[string]any{"a": "{{ world.x.y }}"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Eval(testEnv())
	if got := errText(err); !strings.HasPrefix(got, "[0].a: ") {
		t.Errorf("error = %q, want the path [0].a", got)
	}
}
