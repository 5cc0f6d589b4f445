package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Decode gives the world's types: int64 for an integer that fits, float64
// for any other number, the text of a number beyond float64's range, and
// maps and slices of those.
func TestDecodeTypes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want any
	}{
		{`{"decision":"approve","confidence":0.92,"priority":2,"tags":["a",null,true],"nested":{"n":-0}}`,
			map[string]any{"decision": "approve", "confidence": 0.92, "priority": int64(2), "tags": []any{"a", nil, true}, "nested": map[string]any{"n": int64(0)}}},
		{`9223372036854775807`, int64(9223372036854775807)},
		{`-9223372036854775808`, int64(-9223372036854775808)},
		{`9223372036854775808`, 9223372036854775808.0},
		{`1e3`, 1000.0},
		{`2.0`, 2.0},
		{`1e400`, "1e400"},
		{`-1e400`, "-1e400"},
		{` "x" `, "x"},
		{`{"a":1,"a":2}`, map[string]any{"a": int64(2)}},
	} {
		got, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Decode(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// Decode refuses what is not one JSON value, with encoding/json's words.
func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{`:           "unexpected EOF",
		`{"a":1,}`:    "invalid character '}' looking for beginning of object key string",
		`{} {}`:       "unexpected data after the JSON value",
		`1 2`:         "unexpected data after the JSON value",
		``:            "EOF",
		`[1,2`:        "unexpected EOF",
		`{"a":tru}`:   "invalid character '}' in literal true (expecting 'e')",
		`"caf` + "\n": "invalid character '\\n' in string literal",
	} {
		_, err := Decode([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("Decode(%q) error = %v, want %q", in, err, want)
		}
	}
}

// BenchmarkDecode is Decode of the decide benchmark's submission.
func BenchmarkDecode(b *testing.B) {
	in := []byte(`{"decision":"approve","reason":"within policy","confidence":0.92,"risk":"low","tags":["travel","taxi"],"owner":"ann","priority":2,"blocking":false,"summary":"Taxi fare under the auto-approve limit.","score":7.5}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
