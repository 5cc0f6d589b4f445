package jsonwire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var values = []string{
	`null`, `true`, `false`, `0`, `-0`, `12`, `-3.5e+2`, `1E-7`, `0.000001`, `123456789012345678901234567890`,
	`""`, `"plain"`, `"esc \" \\ \/ \b \f \n \r \t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"caf` + "\u00e9" + `"`,
	`[]`, `[1,"a",null,[true,{}]]`, `{}`, ` { "a" : 1 , "b":[ 1 , 2 ] } `, `{"a":1,"a":2}`,
	`{"nested":{"deep":{"x":[{"y":"z"}]}}}`, `{"": ""}`,
	// What a Reader leaves to encoding/json.
	`1e400`, `-1e400`, `"\ud800"`, `"\ud800x"`, `"\udc00\ud800"`, `01`, `1.`, `.5`, `-`, `+1`, `1e`, `"\x"`,
	`"a` + "\x01" + `"`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `tru`, `nul`, `[1 2]`, `"unterminated`,
	strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
}

// A Reader decodes what encoding/json decodes, to the same value, and
// declines the rest.
func TestValueAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range values {
		checkValue(t, in)
	}
}

func checkValue(t *testing.T, in string) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal([]byte(in), &want)
	for _, sc := range []*Scratch{nil, new(Scratch)} { // filled as read, and gathered
		r := NewReader(in, sc, nil)
		got, ok := r.Value()
		ok = ok && r.End()
		if ok && wantErr != nil {
			t.Errorf("%q (scratch %v): Value took %#v; encoding/json refuses it: %v", in, sc != nil, got, wantErr)
		}
		if ok && !reflect.DeepEqual(want, got) { // cmp.Diff alone takes exponential time on deep nesting
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q (scratch %v): Value (-encoding/json +Value):\n%s", in, sc != nil, diff)
			}
		}
	}
	r := NewReader(in, nil, nil)
	raw, ok := r.Raw()
	ok = ok && r.End()
	if ok && !json.Valid([]byte(in)) {
		t.Errorf("%q: Raw took %q; encoding/json refuses it", in, raw)
	}
	if !ok && json.Valid([]byte(in)) && !strings.HasPrefix(in, "[[[[") {
		t.Errorf("%q: Raw declined valid JSON", in)
	}
	if ok && raw != strings.TrimSpace(in) {
		t.Errorf("%q: Raw = %q", in, raw)
	}
}

func TestValueDeclinesWhatItMustLeave(t *testing.T) {
	for _, in := range []string{`1e400`, `"\ud800"`, `"\udc00\ud800"`, strings.Repeat("[", 1200) + strings.Repeat("]", 1200)} {
		r := NewReader(in, nil, nil)
		if _, ok := r.Value(); ok {
			t.Errorf("%.40q: Value took it; encoding/json's replacements and limits are its own", in)
		}
	}
}

func TestInt(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-7", -7, true},
		{"1.0", 0, false}, {"1e2", 0, false}, {"99999999999999999999", 0, false}, {`"1"`, 0, false},
	}
	for _, tc := range cases {
		var want int
		wantErr := json.Unmarshal([]byte(tc.in), &want)
		if (wantErr == nil) != tc.ok || want != tc.want {
			t.Fatalf("%s: the case disagrees with encoding/json (%d, %v)", tc.in, want, wantErr)
		}
		r := NewReader(tc.in, nil, nil)
		got, ok := r.Int()
		if ok != tc.ok || got != tc.want {
			t.Errorf("Int(%s) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzValue(f *testing.F) {
	for _, v := range values {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) {
			return // the framing refuses it before any decoding
		}
		checkValue(t, in)
	})
}
