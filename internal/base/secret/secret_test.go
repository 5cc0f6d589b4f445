package secret_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

const long = "sk-live-0123456789" // 18 bytes: masked as a substring

func TestString(t *testing.T) {
	m := secret.New([]string{long, "crash", "", "crash"}, []string{"deadline", "aaaaaaaa"})
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"crash", "REDACTED"}, // a whole string equal to a short value
		{"agent: plugin_crash: exit 3", "agent: plugin_crash: exit 3"}, // short: not inside a string
		{"crashed", "crashed"},
		{"token " + long + " end", "token REDACTED end"},
		{long, "REDACTED"},
		{long + long, "REDACTEDREDACTED"},
		{"aaaaaaaaa!", "REDACTED!"}, // overlapping occurrences merge into one
		{"x" + long[:10], "x" + long[:10]},
		// "deadline" is long but lies inside the kind deadline_exceeded.
		{"agent: deadline_exceeded: deadline 5s", "agent: deadline_exceeded: REDACTED 5s"},
		{"deadline", "REDACTED"},
	} {
		if got := m.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	m := secret.New([]string{long, "crash", "1"})
	for _, tc := range []struct{ in, want string }{
		{"crash", "REDACTED"},
		{"got:\n  crash \nend\n", "got:\n  REDACTED \nend\n"},                        // a whole line
		{"JUDGE_MODE=crash\n", "JUDGE_MODE=crash\n"},                                 // short: never inside a line
		{"agent: plugin_crash: exit status 1", "agent: plugin_crash: exit status 1"}, // DEBUG=1 garbles nothing
		{"key=" + long + "x\n", "key=REDACTEDx\n"},
		{"a " + long + "\n" + long, "a REDACTED\nREDACTED"},
	} {
		if got := m.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKey(t *testing.T) {
	m := secret.New([]string{long, "verb"})
	for _, tc := range []struct{ in, want string }{
		{"verb", "verb"}, // a short value never rewrites a key
		{"error_kind", "error_kind"},
		{"k-" + long, "k-REDACTED"},
	} {
		if got := m.Key(tc.in); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestKeptWords: the words masking never rewrites are exactly the agent
// contract's error kinds and the agent verbs, and each survives a secret
// equal to it or to a part of it.
func TestKeptWords(t *testing.T) {
	kept := []string{}
	for _, k := range []agent.ErrorKind{agent.KindSchemaInvalid, agent.KindPluginCrash, agent.KindDeadlineExceeded,
		agent.KindTransportError, agent.KindSubEventNamespaceViolation, agent.KindSubEventCallIDMismatch} {
		kept = append(kept, string(k))
	}
	kept = append(kept, plugin.VerbAsk, plugin.VerbDecide, plugin.VerbExtract, plugin.VerbTask, plugin.VerbConverse)
	if d := cmp.Diff(kept, secret.KeptWords()); d != "" {
		t.Errorf("kept words differ from the AskError kinds and verbs (-want +kept):\n%s", d)
	}
	for _, k := range kept {
		vals := []string{k}
		if len(k) >= secret.MinSubstring {
			vals = append(vals, k[:secret.MinSubstring])
		}
		m := secret.New(vals)
		for _, s := range []string{k, "agent: " + k + ": detail"} {
			if got := m.String(s); got != s {
				t.Errorf("String(%q) = %q", s, got)
			}
			if got := m.Text(s); got != s {
				t.Errorf("Text(%q) = %q", s, got)
			}
		}
	}
}

func TestValue(t *testing.T) {
	m := secret.New([]string{long, "crash", "12", "12345678"})
	in := map[string]any{
		"error_kind": "plugin_crash",
		"mode":       "crash",
		"crash":      "kept key",
		"list":       []any{"crash", "a " + long, json.Number("12"), json.Number("99123456789")},
		"strs":       []string{long},
		"hdr":        map[string]string{"h": "crash"},
		"raw":        json.RawMessage(`{"answer":"` + long + `","n":1}`),
		"inert":      json.RawMessage(`{"answer":"fine"}`),
		"n":          3,
	}
	want := map[string]any{
		"error_kind": "plugin_crash",
		"mode":       "REDACTED",
		"crash":      "kept key",
		"list":       []any{"REDACTED", "a REDACTED", json.Number("12"), "REDACTED"},
		"strs":       []string{"REDACTED"},
		"hdr":        map[string]string{"h": "REDACTED"},
		"raw":        json.RawMessage(`{"answer":"REDACTED","n":1}`),
		"inert":      json.RawMessage(`{"answer":"fine"}`),
		"n":          3,
	}
	got := m.Value(in)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Value (-want +got):\n%s", d)
	}
	if in["mode"] != "crash" {
		t.Errorf("Value modified its argument")
	}
}

func TestJSON(t *testing.T) {
	m := secret.New([]string{long, "crash"})
	for _, tc := range []struct{ in, want string }{
		{`{"b":"crash","a":"plugin_crash"}`, `{"a":"plugin_crash","b":"REDACTED"}`},
		{`{"answer":"no secret"}`, `{"answer":"no secret"}`},                // untouched, byte for byte
		{`{"n": 1.50, "s": "x` + long + `"}`, `{"n":1.50,"s":"xREDACTED"}`}, // numbers kept exact
	} {
		got, err := m.JSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("JSON(%s): %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := m.JSON([]byte(`{"crash":`)); err == nil {
		t.Error("invalid JSON was accepted")
	}
}

func TestWriterAndError(t *testing.T) {
	m := secret.New([]string{long, "crash"})
	var buf bytes.Buffer
	w := m.Writer(&buf)
	line := "error: agent: plugin_crash: stderr said " + long + " (mode crash)\n"
	n, err := w.Write([]byte(line))
	if err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "error: agent: plugin_crash: stderr said REDACTED (mode crash)\n"; buf.String() != want {
		t.Errorf("wrote %q, want %q", buf.String(), want)
	}

	cause := &fs.PathError{Op: "open", Path: "/tmp/" + long, Err: fs.ErrNotExist}
	e := m.Error(cause)
	if e.Error() != "open /tmp/REDACTED: file does not exist" {
		t.Errorf("Error() = %q", e.Error())
	}
	if !errors.Is(e, fs.ErrNotExist) {
		t.Error("the masked error does not wrap its cause")
	}
	plain := errors.New("nothing to hide")
	if m.Error(plain) != plain || m.Error(nil) != nil {
		t.Error("an error with nothing to mask was wrapped")
	}
}

func TestEmpty(t *testing.T) {
	var nilM *secret.Masker
	for _, m := range []*secret.Masker{nilM, secret.New(), secret.New([]string{""})} {
		if !m.Empty() || m.String("x") != "x" || m.Text("x") != "x" || m.MayOccur([]byte("x")) {
			t.Errorf("%v masks something", m)
		}
		var buf bytes.Buffer
		if m.Writer(&buf) != &buf {
			t.Error("an empty masker wrapped the writer")
		}
	}
}
