package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// A payload is written as encoding/json writes the same value, since the
// reader, Kitsoki and byte-identical round trips all rely on that
// encoding: values the scrubber turns into their JSON form first (structs,
// typed maps) come out with sorted keys.
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
	got := payloadBytes(t, values)
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
	got = payloadBytes(t, ordered)
	want, _ = json.Marshal(ordered)
	if string(got) != string(want) {
		t.Errorf("byte mismatch:\n got %s\nwant %s", got, want)
	}
}

// payloadBytes is the payload of the line a MemSink writes for p.
func payloadBytes(t *testing.T, p map[string]any) []byte {
	t.Helper()
	s := NewMemSink()
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: p})
	l := lines(s.Bytes())[1]
	const key = `"payload":`
	i := strings.Index(l, key)
	if i < 0 || !strings.HasSuffix(l, "}") {
		t.Fatalf("no payload in %s", l)
	}
	return []byte(l[i+len(key) : len(l)-1])
}

func TestIsNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e5": true, "1E+5": true, "-1.5e-7": true,
		"-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false,
		"+1": false, "0x10": false, "1.5.5": false, " 1": false, "1 ": false, "NaN": false, "1e5x": false,
		`"1"`: false, "[1]": false, "true": false,
	} {
		if got := isNumber(s); got != want {
			t.Errorf("isNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

// With nothing to mask or refuse, the scrubber hands the caller's own
// values to the encoder: nothing is copied.
func TestScrubKeepsTheCallersValues(t *testing.T) {
	sub := map[string]any{"decision": "approve", "reason": "<ok> & fine", "n": 2.5, "tags": []any{"a"}}
	s := newScrubber(secret.New([]string{"sk-not-in-there"}))
	out, err := s.payloadOf(nil, sub)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(out).Pointer() != reflect.ValueOf(sub).Pointer() {
		t.Error("an open payload with nothing to change was copied")
	}
	typed := HarnessReturned{Namespace: "host.agent.decide", Data: map[string]any{"submission": sub, "ok": true}}
	out, err = s.payloadOf(typed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(HarnessReturned); !ok {
		t.Fatalf("typed payload came back as %T", out)
	}
	if reflect.ValueOf(out.(HarnessReturned).Data).Pointer() != reflect.ValueOf(typed.Data).Pointer() {
		t.Error("a typed payload with nothing to change was copied")
	}
}

// A masked value is written masked and the caller's maps, slices and
// typed payloads keep their own values.
func TestScrubCopiesWhatItChanges(t *testing.T) {
	const long = "sk-0123456789"
	sub := map[string]any{"token": long, "list": []any{"x", long}, "keep": "plain", "Authorization": "Bearer x"}
	before := fmt.Sprint(sub)
	s := NewMemSink(WithSecrets([]string{long}))
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: map[string]any{"sub": sub}})
	if err := s.AppendPayload(&Event{Turn: 1}, AgentCallComplete{Verb: "decide", Model: long,
		Response: AgentResponse{Submission: sub}, Substitution: &Substitution{Reason: long}}); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(sub); after != before {
		t.Errorf("the caller's map changed: %s, was %s", after, before)
	}
	out := string(s.Bytes())
	if strings.Contains(out, long) || strings.Contains(out, "Bearer") {
		t.Errorf("secret written:\n%s", out)
	}
	if !strings.Contains(out, `"keep":"plain"`) || strings.Count(out, `"token":"REDACTED"`) != 2 {
		t.Errorf("masked lines lost a value:\n%s", out)
	}
}

// Increments are counts: their keys are masked, a sensitive header name
// keeps its count, and the caller's map is left as it was.
func TestScrubIncrements(t *testing.T) {
	const long = "sk-0123456789"
	inc := map[string]int64{"n-" + long: 2, "cookie": 3}
	s := NewMemSink(WithSecrets([]string{long}))
	if err := s.AppendPayload(&Event{Turn: 1}, WorldUpdate{Increment: inc}); err != nil {
		t.Fatal(err)
	}
	if got := lines(s.Bytes())[1]; !strings.HasSuffix(got, `"payload":{"increment":{"cookie":3,"n-REDACTED":2}}}`) {
		t.Errorf("line %s", got)
	}
	if inc["n-"+long] != 2 || len(inc) != 2 {
		t.Errorf("the caller's map changed: %v", inc)
	}
	if err := s.AppendPayload(&Event{Turn: 1}, WorldUpdate{Increment: map[string]int64{"a\x00": 1}}); err == nil ||
		!strings.Contains(err.Error(), "payload contains NUL byte at payload.increment{key}") {
		t.Errorf("NUL in an increment's key: %v", err)
	}
}
