package replay

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
)

// TestCassetteMasksSecrets: a cassette written with cassette.WithSecrets masks a
// long secret wherever it occurs (a number's digits included) and a short
// one only where a whole string scalar equals it (never a number: "1" as
// a secret leaves turn: 1 alone); keys and the AskError kind are never
// rewritten.
func TestCassetteMasksSecrets(t *testing.T) {
	eps := []*cassette.Episode{{
		ID:    "e1",
		Match: map[string]any{"handler": "host.lookup", "mode": "crash"},
		Response: cassette.Response{HasData: true, Data: map[string]any{
			"pin": 12345678, "crash": "kept key", "note": "pin is 12345678!",
		}},
		Agent: &cassette.AgentBlock{Verb: "ask", Model: "crash", Turn: 1, Error: "agent: plugin_crash: crash mode"},
	}}
	c, err := New("app", eps, cassette.WithGetenv(func(string) string { return "" }), cassette.WithSecrets([]string{"12345678", "crash", "1"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"mode: REDACTED", "pin: REDACTED", "crash: kept key", "note: pin is REDACTED!",
		"model: REDACTED", "turn: 1", "error: 'agent: plugin_crash: crash mode'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cassette lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "12345678") {
		t.Errorf("cassette shows the secret:\n%s", got)
	}
	// The masked cassette still parses.
	if _, err := parseCassette(b, "masked.yaml", cassette.WithGetenv(func(string) string { return "" })); err != nil {
		t.Errorf("masked cassette does not parse: %v", err)
	}

	// A recorder passes its options to the recording.
	r := NewRecorder("app", "1", cassette.WithSecrets([]string{"12345678"}))
	r.add(&cassette.Episode{ID: "x", Match: map[string]any{"handler": "h"}, Agent: &cassette.AgentBlock{Verb: "ask", Response: `{"pin":"12345678"}`}})
	rb, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rb), "12345678") || !strings.Contains(string(rb), `{"pin":"REDACTED"}`) {
		t.Errorf("recording:\n%s", rb)
	}
}
