package trace

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPayloadRejections(t *testing.T) {
	type withFloat struct {
		F float64 `json:"f"`
	}
	deep := map[string]any{}
	cur := deep
	for range maxDepth + 5 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	tests := []struct {
		name    string
		payload map[string]any
		is      error  // sentinel, when there is one
		want    string // substring of the message
	}{
		{"NUL in string", map[string]any{"input": "a\x00b"}, ErrNULByte, "payload contains NUL byte at payload.input"},
		{"NUL after non-ASCII", map[string]any{"x": "é\x00"}, ErrNULByte, "payload contains NUL byte"},
		{"NUL in key", map[string]any{"k\x00": 1}, ErrNULByte, "payload contains NUL byte at payload{key}"},
		{"NUL deep in array", map[string]any{"a": []any{1, map[string]any{"b": []any{"ok", "x\x00"}}}}, ErrNULByte, "at payload.a[1].b[1]"},
		{"NUL in []string", map[string]any{"a": []string{"ok", "\x00"}}, ErrNULByte, "at payload.a[1]"},
		{"NUL in embedded JSON", map[string]any{"r": json.RawMessage(`{"s":"\u0000"}`)}, ErrNULByte, "at payload.r.s"},
		{"NFD string", map[string]any{"name": "Jose\u0301"}, ErrNotNFC, "payload string contains NFD-normalised unicode (must be NFC) at payload.name"},
		{"NFD composed by escape", map[string]any{"s": "<\u0338"}, ErrNotNFC, "must be NFC"},
		{"NFD in map[string]string", map[string]any{"m": map[string]string{"k": "a\u0308"}}, ErrNotNFC, "at payload.m.k"},
		{"NFD in embedded JSON", map[string]any{"r": json.RawMessage(`["e\u0301"]`)}, ErrNotNFC, "at payload.r[0]"},
		{"NaN", map[string]any{"x": math.NaN()}, ErrNaNOrInf, "NaN or Inf"},
		{"+Inf", map[string]any{"x": []any{math.Inf(1)}}, ErrNaNOrInf, "at payload.x[0]"},
		{"-Inf float32", map[string]any{"x": float32(math.Inf(-1))}, ErrNaNOrInf, "NaN or Inf"},
		{"NaN in struct", map[string]any{"x": withFloat{F: math.NaN()}}, ErrNaNOrInf, "NaN or Inf"},
		{"invalid embedded JSON", map[string]any{"r": json.RawMessage(`{"a":`)}, nil, "payload holds invalid embedded JSON"},
		{"invalid json.Number", map[string]any{"n": json.Number("12abc")}, nil, "payload holds a json.Number that is not a JSON number at payload.n"},
		{"unencodable type", map[string]any{"c": make(chan int)}, nil, "payload value of type chan int cannot be encoded as JSON"},
		{"too deep", deep, ErrTooDeep, "payload nested deeper than 1000 levels"},
	}
	for _, ts := range bothSinks(t) {
		for _, tt := range tests {
			t.Run(ts.name+"/"+tt.name, func(t *testing.T) {
				before := ts.bytes()
				ev := &Event{Turn: 1, Seq: 42, Kind: "k", Payload: tt.payload}
				err := ts.sink.Append(ev)
				if err == nil {
					t.Fatal("Append accepted the payload")
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("error %v is not %v", err, tt.is)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q does not contain %q", err, tt.want)
				}
				if ev.Seq != 42 || ev.TS != "" {
					t.Errorf("rejected event was given seq=%d ts=%q", ev.Seq, ev.TS)
				}
				if string(before) != string(ts.bytes()) {
					t.Error("rejected append changed the trace")
				}
			})
		}
	}
}

func TestPayloadAcceptsValidUnicode(t *testing.T) {
	s := NewMemSink()
	p := map[string]any{"nfc": "José ≮ 日本語 🎉", "invalid utf8": "a\xffb"}
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: p})
	got := s.Events()[0].Payload
	if got["nfc"] != "José ≮ 日本語 🎉" {
		t.Errorf("nfc = %q", got["nfc"])
	}
	// Like encoding/json, invalid UTF-8 is written as U+FFFD.
	if got["invalid utf8"] != "a\ufffdb" {
		t.Errorf("invalid utf8 = %q", got["invalid utf8"])
	}
}

func TestRedaction(t *testing.T) {
	type creds struct {
		User  string            `json:"user"`
		Token string            `json:"token"`
		Hdr   map[string]string `json:"hdr"`
	}
	// Long values (8 bytes or more) are masked as substrings, short ones
	// only where a whole string equals them.
	secrets := []string{"sk-ant-0123456789", "p4ss", "qz", "overlapAB", "ABcdefgh", "crash", "7", "34567890"}
	tests := []struct {
		name    string
		payload map[string]any
		want    map[string]any
	}{
		{"whole string", map[string]any{"k": "sk-ant-0123456789"}, map[string]any{"k": "REDACTED"}},
		{"inside string", map[string]any{"k": "key=sk-ant-0123456789;"}, map[string]any{"k": "key=REDACTED;"}},
		{"several occurrences", map[string]any{"k": "sk-ant-0123456789 sk-ant-0123456789"}, map[string]any{"k": "REDACTED REDACTED"}},
		{"short secret whole", map[string]any{"k": "qz"}, map[string]any{"k": "REDACTED"}},
		{"short secret inside a string", map[string]any{"k": "aqzb p4ss"}, map[string]any{"k": "aqzb p4ss"}},
		{"overlapping secrets merge", map[string]any{"k": "<overlapABcdefgh>"}, map[string]any{"k": "<REDACTED>"}},
		{"deep", map[string]any{"a": []any{map[string]any{"b": []any{"p4ss", "x p4ss"}}}}, map[string]any{"a": []any{map[string]any{"b": []any{"REDACTED", "x p4ss"}}}}},
		{"error kind kept", map[string]any{"error": "agent: plugin_crash: crash", "error_kind": "plugin_crash", "mode": "crash"},
			map[string]any{"error": "agent: plugin_crash: crash", "error_kind": "plugin_crash", "mode": "REDACTED"}},
		{"[]string", map[string]any{"a": []string{"ok", "p4ss"}}, map[string]any{"a": []any{"ok", "REDACTED"}}},
		{"map[string]string", map[string]any{"m": map[string]string{"a": "p4ss"}}, map[string]any{"m": map[string]any{"a": "REDACTED"}}},
		{"short map key kept", map[string]any{"p4ss": 1}, map[string]any{"p4ss": json.Number("1")}},
		{"long map key", map[string]any{"k-sk-ant-0123456789": 1}, map[string]any{"k-REDACTED": json.Number("1")}},
		{"embedded JSON long", map[string]any{"r": json.RawMessage(`{"t":"x sk-ant-0123456789"}`)}, map[string]any{"r": map[string]any{"t": "x REDACTED"}}},
		{"embedded JSON", map[string]any{"r": json.RawMessage(`{"t":"p4ss","n":1}`)}, map[string]any{"r": map[string]any{"t": "REDACTED", "n": json.Number("1")}}},
		{"embedded JSON escaped", map[string]any{"r": json.RawMessage(`"\u0070\u0034ss"`)}, map[string]any{"r": "REDACTED"}},
		{"embedded JSON without secrets", map[string]any{"r": json.RawMessage(`{"t":"plain <text>","n":[1]}`)}, map[string]any{"r": map[string]any{"t": "plain <text>", "n": []any{json.Number("1")}}}},
		{"embedded JSON header", map[string]any{"r": json.RawMessage(`{"h":{"AUTHORIZATION":"x","Set-cookie":["a"]}}`)}, map[string]any{"r": map[string]any{"h": map[string]any{"AUTHORIZATION": "REDACTED", "Set-cookie": "REDACTED"}}}},
		{"struct", map[string]any{"c": creds{User: "u", Token: "p4ss"}}, map[string]any{"c": map[string]any{"user": "u", "token": "REDACTED", "hdr": nil}}},
		{"numbers untouched", map[string]any{"n": 1234}, map[string]any{"n": json.Number("1234")}},
		{"a short value never masks a number", map[string]any{"r": json.RawMessage(`{"n":7,"qz":"qz"}`)}, map[string]any{"r": map[string]any{"n": json.Number("7"), "qz": "REDACTED"}}},
		{"a plugin's number holding a long secret", map[string]any{"r": json.RawMessage(`{"pin":123456789012}`)}, map[string]any{"r": map[string]any{"pin": "REDACTED"}}},
		{"headers any case", map[string]any{"headers": map[string]any{
			"authorization": "Bearer abc", "COOKIE": "a=b", "Set-Cookie": []any{"x", "y"},
			"Proxy-Authorization": "Basic zz", "Accept": "text/plain",
		}}, map[string]any{"headers": map[string]any{
			"authorization": "REDACTED", "COOKIE": "REDACTED", "Set-Cookie": "REDACTED",
			"Proxy-Authorization": "REDACTED", "Accept": "text/plain",
		}}},
		{"http.Header", map[string]any{"h": http.Header{"Authorization": {"Bearer abc"}, "X-Id": {"1"}}},
			map[string]any{"h": map[string]any{"Authorization": "REDACTED", "X-Id": []any{"1"}}}},
		{"header in struct", map[string]any{"c": creds{Hdr: map[string]string{"Cookie": "c=1"}}},
			map[string]any{"c": map[string]any{"user": "", "token": "", "hdr": map[string]any{"Cookie": "REDACTED"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewMemSink(WithSecrets(secrets))
			mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: tt.payload})
			if diff := cmp.Diff(tt.want, s.Events()[0].Payload); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

// Sensitive headers are redacted even when no secrets are configured.
func TestHeaderRedactionWithoutSecrets(t *testing.T) {
	s := NewMemSink()
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: map[string]any{
		"request": map[string]any{"headers": map[string]string{"Authorization": "Bearer t0ken"}},
		"raw":     json.RawMessage(`{"headers":{"cookie":"t0ken"}}`),
	}})
	if strings.Contains(string(s.Bytes()), "t0ken") {
		t.Errorf("authorization header value written: %s", s.Bytes())
	}
}

func TestWithSecretsIgnoresEmptyAndAccumulates(t *testing.T) {
	s := NewMemSink(WithSecrets([]string{"", "aaaaaaaa"}), WithSecrets([]string{"bbbbbbbb"}))
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: map[string]any{"k": "aaaaaaaa-bbbbbbbb-ccc"}})
	if got := s.Events()[0].Payload["k"]; got != "REDACTED-REDACTED-ccc" {
		t.Errorf("k = %q", got)
	}
}
