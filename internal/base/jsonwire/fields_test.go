package jsonwire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type fieldsRec struct {
	S   string
	N   int
	Raw json.RawMessage
	M   map[string]any
	F   bool
}

func readFields(in string) (fieldsRec, bool) {
	var rec fieldsRec
	r := NewReader(in, nil, nil)
	ok := r.Fields([]Field{
		{Key: "s", To: &rec.S, Required: true},
		{Key: "n", To: &rec.N},
		{Key: "raw", To: &rec.Raw},
		{Key: "m", To: &rec.M},
		{Key: "f", To: func() bool {
			rec.F = true
			return r.Take('[') && r.Take(']')
		}},
	})
	return rec, ok && r.End()
}

// Fields takes an object of known keys, each once, in any order, and
// declines what encoding/json decodes into a struct its own way.
func TestFields(t *testing.T) {
	cases := []struct {
		in   string
		want fieldsRec
		ok   bool
	}{
		{`{"s":"a","n":2,"raw":[1, {}],"m":{"k":1},"f":[]}`, fieldsRec{S: "a", N: 2, Raw: json.RawMessage(`[1, {}]`), M: map[string]any{"k": 1.0}, F: true}, true},
		{` { "f" : [ ] , "m" : null , "s" : "b" } `, fieldsRec{S: "b", F: true}, true},
		{`{"s":""}`, fieldsRec{}, true},
		{`{}`, fieldsRec{}, false},                // s is required
		{`{"n":1}`, fieldsRec{}, false},           // likewise
		{`{"s":"a","s":"b"}`, fieldsRec{}, false}, // repeated
		{`{"S":"a"}`, fieldsRec{}, false},         // another spelling
		{`{"s":"a","x":1}`, fieldsRec{}, false},   // another key
		{`{"s":null}`, fieldsRec{}, false},        // null
		{`{"s":"a","raw":null}`, fieldsRec{}, false},
		{`{"s":"a","n":1.5}`, fieldsRec{}, false},
		{`{"s":"a","m":[]}`, fieldsRec{}, false},
		{`{"s":"a","f":{}}`, fieldsRec{}, false}, // the func declines
		{`{"s":"a",}`, fieldsRec{}, false},
		{`["s"]`, fieldsRec{}, false},
	}
	for _, tc := range cases {
		got, ok := readFields(tc.in)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if diff := cmp.Diff(tc.want, got); ok && diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

// A destination of a kind Fields does not know declines the input.
func TestIntoUnknownKind(t *testing.T) {
	var f float64
	r := NewReader(`1`, nil, nil)
	if r.Into(&f) {
		t.Error("Into(*float64) took 1")
	}
}
