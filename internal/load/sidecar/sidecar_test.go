package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	sc, err := Parse([]byte("inputs:\n  b: {type: int, required: true}\n  a: {}\noutputs:\n  x: {type: list, description: rows}\n"), "s.star.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Sidecar{
		Inputs:  []Field{{Name: "a", Type: "any", Line: 3, Col: 3}, {Name: "b", Type: "int", Required: true, Line: 2, Col: 3}},
		Outputs: []Field{{Name: "x", Type: "list", Line: 5, Col: 3}},
	}
	if d := cmp.Diff(want, sc); d != "" {
		t.Errorf("sidecar (-want +got):\n%s", d)
	}
	for _, empty := range []string{"", "# nothing\n", "~\n"} {
		if sc, err := Parse([]byte(empty), "e.yaml"); err != nil || len(sc.Inputs)+len(sc.Outputs) != 0 {
			t.Errorf("Parse(%q) = %+v, %v; want an empty sidecar", empty, sc, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"inputs:\n  n: {type: integer}\n", `s.yaml:2:13: inputs.n.type: unknown type "integer" (want one of string, int, number, bool, object, list, any)`},
		{"input:\n  n: {type: int}\n", "s.yaml:1:1: input: unknown key (a sidecar has inputs: and outputs:)"},
		{"inputs:\n  n: {type: int, required: yes please}\n", "s.yaml:2:28: inputs.n.required: must be true or false"},
		{"outputs:\n  n: {type: int, required: true}\n", "s.yaml:2:18: outputs.n.required: unknown key (a field has type: and description:)"},
		{"outputs:\n  __http_exchanges: {type: list}\n", "s.yaml:2:3: outputs.__http_exchanges: this output is reserved (the handler adds the script's HTTP exchanges under it); rename it"},
		{"inputs: [a, b]\n", "s.yaml:1:9: inputs: expected a mapping of names to {type: …}"},
		{"inputs:\n  n: int\n", "s.yaml:2:6: inputs.n: expected {type: <T>, required: <bool>}"},
		{"- a\n", "s.yaml:1:1: a sidecar is a mapping with inputs: and outputs:"},
		{"inputs: {\n", "s.yaml: not valid YAML: yaml: line 1: did not find expected node content"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.src), "s.yaml")
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

func TestCheckInputsAndOutputs(t *testing.T) {
	sc, err := Parse([]byte("inputs:\n  n: {type: int, required: true}\n  s: {type: string}\noutputs:\n  ok: {type: bool}\n  rows: {type: list}\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"n": int64(3)}, ""},
		{map[string]any{"n": 3.0, "extra": "passes"}, ""},
		{map[string]any{}, `input "n" is required (declared int) but missing`},
		{map[string]any{"n": "3", "s": 4}, `input "n" must be int, got string "3"; input "s" must be string, got int 4`},
	}
	for _, tt := range in {
		err := sc.CheckInputs(tt.in)
		if got := errText(err); got != tt.want {
			t.Errorf("CheckInputs(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	out := []struct {
		out  map[string]any
		want string
	}{
		{map[string]any{"ok": true, "rows": []any{}}, ""},
		{map[string]any{"ok": true}, `output "rows" is declared but was not returned`},
		{map[string]any{"ok": "yes", "rows": []any{}, "zz": 1}, `output "ok" must be bool, got string "yes"; ` +
			`output "zz" was returned but is not declared in the sidecar (declare it or drop it)`},
	}
	for _, tt := range out {
		if got := errText(sc.CheckOutputs(tt.out)); got != tt.want {
			t.Errorf("CheckOutputs(%v) = %q, want %q", tt.out, got, tt.want)
		}
	}
	if err := (&Sidecar{}).CheckOutputs(map[string]any{"anything": 1}); err != nil {
		t.Errorf("no declared outputs: %v, want any dict accepted", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
