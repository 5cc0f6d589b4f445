package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/jsonwire"
)

// decodeCases are inputs Decode's own parser must read as encoding/json
// does, or leave to it; the second list must be left to it.
var decodeCases = []string{
	`{"decision":"approve","reason":"within policy","confidence":0.92,"risk":"low","tags":["travel","taxi"],"owner":"ann","priority":2,"blocking":false,"summary":"Taxi fare under the auto-approve limit.","score":7.5}`,
	` {} `, `[]`, `[[],{}]`, `null`, `true`, `false`, `"x"`, `""`, `0`, `-0`, `-0.0`, `1e3`, `1E+2`, `1e-400`, `1e400`, `-1e400`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
	`123456789012345678901234567890`, `0.1e1`,
	`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]}}`, "\t\r\n{\"k\" :\n[ 1 , 2 ]\r}\n",
	`"esc: \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac \ud83d\ude00 \u0000"`,
	`"héllo – 日本"`, `{"é":"ü"}`,
	// Left to encoding/json (errors, or its own replacement rules):
	`{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `1.5.2`, `tru`, `nul`, `True`,
	`{} {}`, `1 2`, `{}x`, ``, `  `, "\"a\nb\"", `"\x"`, `"\u12"`, `"\ud83d"`, `"\ud83d\u0041"`, `"\udc00"`,
	"\"caf\xe9\"", `"unterminated`, `[1,2`, `{"a":[}`,
}

// TestDecodeAgreesWithEncodingJSON: every input decodes to the same value
// as DecodeStandard, or fails with its error.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range decodeCases {
		checkDecode(t, []byte(in))
	}
}

// TestDecodeLeavesWhatItDoesNotTake pins which inputs Decode's own
// parser takes, so a change that sends the common case to encoding/json
// (or takes what it must not) shows.
func TestDecodeLeavesWhatItDoesNotTake(t *testing.T) {
	for in, want := range map[string]bool{
		decodeCases[0]:                      true,
		`"\ud83d\ude00"`:                    true,
		`{"a":"\n"}`:                        true,
		`1e400`:                             true,
		`"\ud83d"`:                          false, // encoding/json's replacement rule
		"\"caf\xe9\"":                       false, // invalid UTF-8: replaced by encoding/json
		`[1,]`:                              false,
		`{} {}`:                             false,
		string(deep(jsonwire.MaxDepth + 2)): false,
	} {
		if _, ok := decodeFast([]byte(in)); ok != want {
			t.Errorf("decodeFast(%.40q) took it = %v, want %v", in, ok, want)
		}
	}
	checkDecode(t, deep(jsonwire.MaxDepth+2))
}

func deep(n int) []byte {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return b
}

func checkDecode(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := DecodeStandard(in)
	got, err := Decode(in)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("Decode(%.60q) error = %v, want %v", in, err, wantErr)
	}
	if reflect.DeepEqual(want, got) {
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decode(%.60q) (-encoding/json +Decode):\n%s", in, diff)
	}
}

// FuzzDecode checks Decode against encoding/json on any input.
func FuzzDecode(f *testing.F) {
	for _, in := range decodeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecode(t, in)
		if _, ok := decodeFast(in); ok && !json.Valid(in) {
			t.Fatalf("decodeFast took invalid JSON %q", in)
		}
	})
}

// BenchmarkDecode is Decode of the decide benchmark's submission, against
// DecodeStandard (encoding/json) of the same bytes.
func BenchmarkDecode(b *testing.B) {
	in := []byte(decodeCases[0])
	for _, bc := range []struct {
		name   string
		decode func([]byte) (any, error)
	}{{"own", Decode}, {"encoding_json", DecodeStandard}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.decode(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
