package trace

import (
	"errors"
	"math"
	"testing"
)

func TestStorable(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want error
		path string
	}{
		{"nil", nil, nil, ""},
		{"plain", map[string]any{"stdout": "ok", "n": int64(1), "l": []any{"a", 1.5}}, nil, ""},
		{"NUL in a value", map[string]any{"stdout": "a\x00b"}, ErrNULByte, "stdout"},
		{"NUL deep", map[string]any{"a": []any{"x", map[string]any{"b": "\x00"}}}, ErrNULByte, "a[1].b"},
		{"NUL in a key", map[string]any{"k\x00": 1}, ErrNULByte, "{key}"},
		{"NUL in a string", "\x00", ErrNULByte, ""},
		{"NFD", map[string]any{"name": "Jose\u0301"}, ErrNotNFC, "name"},
		{"NaN", map[string]any{"x": math.NaN()}, ErrNaNOrInf, "x"},
		{"a struct", struct{ S string }{"\x00"}, ErrNULByte, "S"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Storable(tc.v)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *StorableError
			if !errors.Is(err, tc.want) || !errors.As(err, &se) || se.Path != tc.path {
				t.Errorf("Storable = %v, want %v at %q", err, tc.want, tc.path)
			}
		})
	}
}

func TestStorableText(t *testing.T) {
	if got := StorableText("out: a\x00b e\u0301"); got != `out: a\x00b é` {
		t.Errorf("StorableText = %q", got)
	}
	if s := "fine"; StorableText(s) != s {
		t.Error("a storable text changed")
	}
}
