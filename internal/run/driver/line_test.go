package driver

import (
	"errors"
	"testing"
)

// TestLineOf: an intent and typed slots written as a line that parses
// back to them.
func TestLineOf(t *testing.T) {
	for _, tc := range []struct {
		slots map[string]any
		line  string
		ok    bool
	}{
		{map[string]any{"name": "Ada", "style": "formal"}, "greet name=Ada style=formal", true},
		{map[string]any{"name": "Ada Lovelace"}, `greet name="Ada Lovelace"`, true},
		{map[string]any{"name": `say "hi"`}, `greet name='say "hi"'`, true},
		{map[string]any{"n": int64(3), "tags": []any{"a", "b"}}, `greet n=3 tags='["a","b"]'`, true},
		{map[string]any{"name": ""}, `greet name=""`, true},
		{map[string]any{"name": `it's "x"`}, "", false},
		{map[string]any{"name": "two\nlines"}, "", false},
	} {
		line, ok := LineOf("greet", tc.slots)
		if line != tc.line || ok != tc.ok {
			t.Errorf("LineOf(%v) = %q %v, want %q %v", tc.slots, line, ok, tc.line, tc.ok)
		}
	}
}

// TestInputRecordable: a NUL byte in an input's text or a slot value is
// refused as an *InputError naming it; decomposed text is put in NFC.
func TestInputRecordable(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string // the error, "" for none
		text string // the text after
	}{
		{"plain", Raw("greet name=Ada"), "", "greet name=Ada"},
		{"decomposed accent", Text("Jose\u0301"), "", "Jos\u00e9"},
		{"NUL in a line", Raw("greet name=A\x00da"), `the input holds a NUL byte (\x00), which a session cannot record: remove it`, ""},
		{"NUL in free text", Text("\x00"), `the input holds a NUL byte (\x00), which a session cannot record: remove it`, ""},
		{"NUL in a slot", Intent("greet", map[string]any{"name": "A\x00da"}), `slot name holds a NUL byte (\x00), which a session cannot record: remove it`, ""},
		{"NUL in a nested slot", Intent("greet", map[string]any{"tags": []any{"a", "b\x00"}}), `slot tags[1] holds a NUL byte (\x00), which a session cannot record: remove it`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Recordable()
			if tt.want == "" {
				if err != nil || got.Text != tt.text {
					t.Errorf("Recordable() = %q, %v; want %q", got.Text, err, tt.text)
				}
				return
			}
			if _, ok := errors.AsType[*InputError](err); !ok || err.Error() != tt.want {
				t.Errorf("Recordable() error = %v, want the InputError %q", err, tt.want)
			}
		})
	}
}
