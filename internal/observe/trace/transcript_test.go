package trace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func transcriptOf(format string, events []string, timings ...int64) *Transcript {
	t := &Transcript{Format: format, Timings: timings}
	for _, e := range events {
		t.Events = append(t.Events, json.RawMessage(e))
	}
	return t
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Writer keeps a call's transcript in transcripts/<call_id>.jsonl (the
// events byte for byte, a secret masked) and .timings beside the trace
// file, private like it; the same bytes again reuse the name, other bytes
// under the same call_id (another session's call in a shared directory)
// take the next free one.
func TestWriterTranscriptSidecar(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "run.jsonl"), WithSecrets([]string{"hunter2-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tr := transcriptOf("claude-stream-json", []string{`{"type":"system","z":1,"a":2.50}`, `{"type":"user","content":"pw hunter2-secret"}`}, 0, 40)
	ref, err := w.WriteTranscript("00aa11bb22cc33dd", tr)
	if err != nil {
		t.Fatal(err)
	}
	want := &TranscriptRef{Format: "claude-stream-json", Path: "transcripts/00aa11bb22cc33dd.jsonl", Events: 2, SchemaVersion: 1}
	if d := cmp.Diff(want, ref); d != "" {
		t.Errorf("ref (-want +got):\n%s", d)
	}
	p := filepath.Join(dir, "transcripts", "00aa11bb22cc33dd")
	if got, wantJ := readFile(t, p+".jsonl"), `{"type":"system","z":1,"a":2.50}`+"\n"+`{"content":"pw REDACTED","type":"user"}`+"\n"; got != wantJ {
		t.Errorf(".jsonl:\n got %q\nwant %q", got, wantJ)
	}
	if got := readFile(t, p+".timings"); got != "0 0\n1 40\n" {
		t.Errorf(".timings = %q", got)
	}
	if fi, err := os.Stat(p + ".jsonl"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sidecar mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	again, err := w.WriteTranscript("00aa11bb22cc33dd", tr)
	if err != nil || again.Path != want.Path {
		t.Errorf("same bytes again: %+v, %v; want the same path", again, err)
	}
	other, err := w.WriteTranscript("00aa11bb22cc33dd", transcriptOf("f", []string{`{"other":true}`}))
	if err != nil || other.Path != "transcripts/00aa11bb22cc33dd.2.jsonl" {
		t.Fatalf("other bytes: %+v, %v; want transcripts/00aa11bb22cc33dd.2.jsonl", other, err)
	}
	if got := readFile(t, p+".jsonl"); got == `{"other":true}`+"\n" {
		t.Error("the first call's sidecar was overwritten")
	}

	back, err := ReadTranscript(dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(transcriptOf("claude-stream-json", []string{`{"type":"system","z":1,"a":2.50}`, `{"content":"pw REDACTED","type":"user"}`}, 0, 40), back); d != "" {
		t.Errorf("ReadTranscript (-want +got):\n%s", d)
	}
}

// A MemSink keeps the same files in memory; a sink that keeps no
// transcripts (Discard) writes nothing and no ref.
func TestMemSinkTranscriptSidecars(t *testing.T) {
	m := NewMemSink()
	ref, err := WriteTranscript(m, "abc", transcriptOf("f", []string{`{"a":1}`}))
	if err != nil || ref == nil || ref.Path != "transcripts/abc.jsonl" {
		t.Fatalf("ref %+v, %v", ref, err)
	}
	want := []Sidecar{{Path: "transcripts/abc.jsonl", Data: []byte("{\"a\":1}\n")}}
	if d := cmp.Diff(want, m.Sidecars()); d != "" {
		t.Errorf("sidecars (-want +got):\n%s", d)
	}
	if ref, err := WriteTranscript(NewDiscard(), "abc", transcriptOf("f", []string{`{}`})); ref != nil || err != nil {
		t.Errorf("Discard: %+v, %v; want nothing", ref, err)
	}
	if ref, err := WriteTranscript(m, "abc", transcriptOf("f", nil)); ref != nil || err != nil {
		t.Errorf("no events: %+v, %v; want nothing", ref, err)
	}
}

// A transcript that cannot be a sidecar, and a ref that points outside
// transcripts/, fail with ErrBadTranscript and say why.
func TestTranscriptRejects(t *testing.T) {
	m := NewMemSink()
	tests := []struct {
		name   string
		callID string
		t      *Transcript
		want   string
	}{
		{"not JSON", "a", transcriptOf("f", []string{`{"a":`}), "bad agent-action transcript: event 0 is not one line of JSON"},
		{"two lines", "a", transcriptOf("f", []string{"{\"a\":\n1}"}), "bad agent-action transcript: event 0 is not one line of JSON"},
		{"timings", "a", transcriptOf("f", []string{`{}`}, 1, 2), "bad agent-action transcript: 2 timings for 1 events: give at most one offset per event"},
		{"negative", "a", transcriptOf("f", []string{`{}`}, -1), "bad agent-action transcript: timing 0 is negative (-1)"},
		{"call id", "../x", transcriptOf("f", []string{`{}`}), `bad agent-action transcript: call_id "../x" cannot name a file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.WriteTranscript(tt.callID, tt.t)
			if !errors.Is(err, ErrBadTranscript) || err.Error() != tt.want {
				t.Errorf("error %v, want %s", err, tt.want)
			}
		})
	}
	dir := t.TempDir()
	for _, p := range []string{"../run.jsonl", "transcripts/../../etc/passwd.jsonl", "/etc/x.jsonl", "transcripts/a.timings"} {
		if _, err := ReadTranscript(dir, &TranscriptRef{Path: p}); !errors.Is(err, ErrBadTranscript) {
			t.Errorf("ReadTranscript(%q) = %v, want a refusal", p, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"a.jsonl": "{}\n{}\n", "a.timings": "0 5\n2 9\n"} {
		if err := os.WriteFile(filepath.Join(dir, "transcripts", name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ReadTranscript(dir, &TranscriptRef{Path: "transcripts/a.jsonl"})
	if !errors.Is(err, ErrBadTranscript) || !strings.Contains(err.Error(), "line 2: event index 2, want 1") {
		t.Errorf("timings out of order: %v", err)
	}
}
