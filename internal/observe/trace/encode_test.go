package trace

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"
)

// The payload encoder must produce exactly what encoding/json produces for
// the same value, since the reader, Kitsoki and byte-identical round trips
// all rely on that encoding.
func TestPayloadEncodingMatchesEncodingJSON(t *testing.T) {
	type inner struct {
		B string `json:"b"`
		A int    `json:"a,omitempty"`
	}
	when := time.Date(2025, 5, 6, 7, 8, 9, 100, time.FixedZone("x", 3600))
	values := map[string]any{
		"ints":      []any{0, -1, int8(-128), int16(300), int32(-70000), int64(math.MinInt64), uint(7), uint8(255), uint16(65535), uint32(1 << 31), uint64(math.MaxUint64), uintptr(9)},
		"floats":    []any{0.0, math.Copysign(0, -1), 0.1, 1.5, -2.25, 1e20, 1e21, 123456789e30, 1e-6, 1e-7, 5e-324, math.MaxFloat64, 100.0},
		"float32s":  []any{float32(0.1), float32(1e21), float32(1e-7), float32(3.4e38), float32(16777216)},
		"numbers":   []any{json.Number("12345678901234567890"), json.Number("-0.5e+10"), json.Number("")},
		"strings":   []any{"", "plain", "<a href=\"x\">&</a>", "tab\tnl\ncr\rbs\\ff\fbell\a\x1f\x7f", "\u2028\u2029", "é日本🎉", "bad\xff\xfeutf8", "\xe2\x82"},
		"nil":       nil,
		"bools":     []any{true, false},
		"nilmap":    map[string]any(nil),
		"nilslice":  []any(nil),
		"nilstrs":   []string(nil),
		"strs":      []string{"a", "<b>"},
		"strmap":    map[string]string{"z": "1", "a": "2", "<k>": "&"},
		"emptymap":  map[string]any{},
		"emptylist": []any{},
		"raw":       json.RawMessage(" { \"b\" : [1, 2 ,\"<&>\"], \"a\":null } "),
		"rawnil":    json.RawMessage(nil),
		"rawutf8":   json.RawMessage(`{"k":"é\u00e9"}`),
		"struct":    inner{B: "x"},
		"structptr": &inner{B: "y", A: 2},
		"time":      when,
		"duration":  3 * time.Second,
		"header":    http.Header{"X-A": {"1", "2"}},
		"bytes":     []byte("hello"),
		"keys":      map[string]any{"b": 1, "a": 2, "A": 3, "é": 4, "<": 5, "": 6, "a\u2028": 7},
		"nested":    map[string]any{"x": []any{map[string]any{"y": []any{[]any{}}}}},
	}
	enc := newPayloadEncoder(nil)
	got, err := enc.encode(nil, values)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	// Go values encoding/json writes in struct or insertion order come out
	// with sorted keys from us; compare through a decode for those, and
	// byte for byte for everything else.
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("our payload is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	for k := range values {
		g, _ := json.Marshal(gotV.(map[string]any)[k])
		w, _ := json.Marshal(wantV.(map[string]any)[k])
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", k, g, w)
		}
	}
	ordered := map[string]any{}
	for k, v := range values {
		switch k {
		case "struct", "structptr":
			continue
		case "rawutf8":
			// Embedded JSON that needs a look inside (non-ASCII or \u
			// escapes) is decoded and re-encoded, so its escapes are
			// normalised: same value, not the same bytes.
			continue
		}
		ordered[k] = v
	}
	got, err = enc.encode(nil, ordered)
	if err != nil {
		t.Fatal(err)
	}
	want, _ = json.Marshal(ordered)
	if string(got) != string(want) {
		t.Errorf("byte mismatch:\n got %s\nwant %s", got, want)
	}
}

// FuzzAppendJSONString checks string escaping against encoding/json on
// arbitrary bytes (the seed corpus runs as part of go test).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "<>&", "\u2028", "\x00\x01\x1f", "\xff", "\xe2\x80", "é\u0301", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzFloat checks float formatting against encoding/json.
func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 0.1, 1e21, 1e-7, 123.456, 5e-324, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		got, err := appendFloat(nil, v, 64)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, %v; want %s", v, got, err, want)
		}
		want32, _ := json.Marshal(float32(v))
		got32, err := appendFloat(nil, float64(float32(v)), 32)
		if !math.IsInf(float64(float32(v)), 0) && (err != nil || string(got32) != string(want32)) {
			t.Errorf("appendFloat(float32 %v) = %s, %v; want %s", float32(v), got32, err, want32)
		}
	})
}

func TestIsValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e5": true, "1E+5": true, "-1.5e-7": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false,
		"+1": false, "0x10": false, "1.5.5": false, " 1": false, "NaN": false, "1e5x": false,
	} {
		if got := isValidNumber(s); got != want {
			t.Errorf("isValidNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

// A map met twice in one payload is written twice as encoding/json writes
// it; one changed between two lines is written as it is now.
func TestRepeatedObjectsEncodeLikeEncodingJSON(t *testing.T) {
	sub := map[string]any{"decision": "approve", "reason": "<ok> & fine", "n": 2.5, "tags": []any{"a"}, "nested": map[string]any{"k": 1}}
	small := map[string]any{"x": 1}
	values := map[string]any{
		"submission": sub, "submitted": sub, "list": []any{sub, small, small},
		"deeper": map[string]any{"again": sub}, "small": small,
	}
	enc := newPayloadEncoder(nil)
	for round := range 2 {
		got, err := enc.encode(nil, values)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("round %d:\n got %s\nwant %s", round, got, want)
		}
		typed, err := enc.encodeTyped(nil, HarnessReturned{Namespace: "host.agent.decide", Data: map[string]any{"submission": sub, "submitted": sub, "ok": true}})
		if err != nil {
			t.Fatal(err)
		}
		wantTyped, _ := json.Marshal(map[string]any{"data": map[string]any{"submission": sub, "submitted": sub, "ok": true}, "namespace": "host.agent.decide"})
		if string(typed) != string(wantTyped) {
			t.Errorf("round %d, typed:\n got %s\nwant %s", round, typed, wantTyped)
		}
		sub["reason"], sub["extra"] = "changed", true // the next round sees the change
	}
	if len(enc.seen) != 0 {
		t.Errorf("the encoder still holds %d of the caller's maps", len(enc.seen))
	}
}

// A map written again in a later payload after a change (values, a key
// swapped for another at the same length, keys added or removed) is
// written as encoding/json writes it now: nothing of an earlier line's
// walk is reused.
func TestChangedMapEncodesAsItIsNow(t *testing.T) {
	m := map[string]any{"a": 1, "b": 2, "c": 3, "d": 4}
	changes := []func(){
		func() {},
		func() { m["a"] = "changed" },
		func() { delete(m, "b"); m["e"] = 5 },       // same length, other keys
		func() { delete(m, "a"); m["0"] = "first" }, // a new first key
		func() { m["f"] = []any{1} },
		func() { delete(m, "c"); delete(m, "d") },
	}
	enc := newPayloadEncoder(nil)
	for i, change := range changes {
		change()
		got, err := enc.encode(nil, map[string]any{"m": m})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"m": m})
		if string(got) != string(want) {
			t.Errorf("change %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// New maps with the keys of an earlier one (each decide's submission is a
// new map with the schema's keys), with other keys of the same count, or
// with one key more, each come out as encoding/json writes them.
func TestNewMapsWithSimilarKeysEncodeLikeEncodingJSON(t *testing.T) {
	enc := newPayloadEncoder(nil)
	maps := []map[string]any{
		{"decision": "approve", "reason": "ok", "risk": "low", "tags": []any{"a"}},
		{"decision": "reject", "reason": "no", "risk": "high", "tags": []any{}},
		{"decision": "reject", "reason": "no", "risk": "high", "tagz": 1},
		{"decision": "x", "reason": "y", "risk": "z", "tags": nil, "extra": true},
		{"tags": "last", "risk": 3, "reason": nil, "decision": 0.5},
	}
	for i, m := range maps {
		got, err := enc.encode(nil, map[string]any{"submission": m})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"submission": m})
		if string(got) != string(want) {
			t.Errorf("map %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
