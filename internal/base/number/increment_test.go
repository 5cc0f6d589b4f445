package number

import (
	"encoding/json"
	"testing"
)

func TestIncrement(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want int64
	}{
		{"nil counts 0", nil, 1},
		{"int", 3, 4},
		{"int32", int32(3), 4},
		{"int64", int64(-3), -2},
		{"uint64", uint64(3), 4},
		{"float64 truncates", 3.9, 4},
		{"float32", float32(3), 4},
		{"json.Number", json.Number("3"), 4},
		{"json.Number fraction truncates", json.Number("3.9"), 4},
		{"integer text", "3", 4},
		{"integer text with spaces", " -3 ", -2},
		{"fraction text counts 0", "3.5", 1},
		{"other text counts 0", "three", 1},
		{"empty text counts 0", "", 1},
		{"bool counts 0", true, 1},
		{"map counts 0", map[string]any{"n": 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Increment(tt.in, 1); got != tt.want {
				t.Errorf("Increment(%#v, 1) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
