package expr

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestToText(t *testing.T) {
	type point struct{ X, Y int }
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"s", "s"},
		{true, "true"},
		{3, "3"},
		{int64(-4), "-4"},
		{int32(5), "5"},
		{0.85, "0.85"},
		{40.0, "40"},
		{1e21, "1e+21"},
		{1234567.0, "1.234567e+06"},
		{float32(0.5), "0.5"},
		{json.Number("12.50"), "12.50"},
		{map[string]any{"b": 1, "a": "<x>"}, `{"a":"<x>","b":1}`},
		{[]any{1, "two", nil}, `[1,"two",null]`},
		{map[any]any{2: "b", "k": []any{map[any]any{true: 1}}}, `{"2":"b","k":[{"true":1}]}`},
		{[]string{"a"}, `["a"]`},
		{map[string]int{"z": 1}, `{"z":1}`},
		{point{1, 2}, "{1 2}"},
		{[]byte("hi"), "[104 105]"},
	}
	for _, tt := range tests {
		if got := toText(tt.in); got != tt.want {
			t.Errorf("toText(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Floats formatted with strconv must read as %v prints them.
	for _, f := range []float64{0, -0.5, 1e-7, 123456789, 1e20, 3.14159, 2.5e-5} {
		if got, want := toText(f), fmt.Sprintf("%v", f); got != want {
			t.Errorf("toText(%v) = %q, %%v gives %q", f, got, want)
		}
	}
}

func TestTruthy(t *testing.T) {
	tests := []struct {
		in   any
		want bool
	}{
		{nil, false}, {false, false}, {true, true},
		{"", false}, {"x", true},
		{0, false}, {2, true}, {int64(0), false}, {uint8(1), true},
		{0.0, false}, {0.1, true},
		{json.Number("0"), false}, {json.Number("1.5"), true},
		{[]any{}, false}, {[]any{1}, true},
		{map[string]any{}, false}, {map[string]any{"a": 1}, true},
		{(*int)(nil), false}, {struct{}{}, true},
	}
	for _, tt := range tests {
		if got := truthy(tt.in); got != tt.want {
			t.Errorf("truthy(%#v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestWidth(t *testing.T) {
	tests := []struct {
		s     string
		width int
	}{
		{"abc", 3},
		{"日本語", 6},
		{"e\u0301", 1}, // e + combining acute
		{"ｆｕｌｌ", 8},    // fullwidth letters
		{"", 0},
	}
	for _, tt := range tests {
		if got := strWidth(tt.s); got != tt.width {
			t.Errorf("strWidth(%q) = %d, want %d", tt.s, got, tt.width)
		}
	}
}
