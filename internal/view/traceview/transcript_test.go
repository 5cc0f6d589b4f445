package traceview

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// writeTranscriptRun writes a trace with one agent call whose
// transcript_ref is ref (nil: the sidecar the call's transcript gets).
func writeTranscriptRun(t *testing.T, ref *trace.TranscriptRef) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := trace.Create(path, trace.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tr := &trace.Transcript{Format: "claude-stream-json", Timings: []int64{0, 20, 30, 40, 41, 90}}
	for _, e := range []string{
		`{"type":"system","subtype":"init"}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"Check the file."},{"type":"tool_use","name":"Read","input":{"path":"a<b.go"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"package a"}]}}`,
		`{"type":"system","subtype":"thinking_tokens","estimated_tokens":3}`,
		`{"_kitsoki":"validator_reject","reason":"text: too short"}`,
		`{"type":"result","subtype":"success","result":"done"}`,
	} {
		tr.Events = append(tr.Events, json.RawMessage(e))
	}
	const id = "0123456789abcdef"
	written, err := w.WriteTranscript(id, tr)
	if err != nil {
		t.Fatal(err)
	}
	if ref == nil {
		ref = written
	}
	for _, step := range []struct {
		ev trace.Event
		p  trace.Payload
	}{
		{trace.Event{Turn: 1, StatePath: "work"}, trace.TurnStart{}},
		{trace.Event{Turn: 1, StatePath: "work", CallID: id}, trace.AgentCallStart{Verb: "task", Agent: "fixer"}},
		{trace.Event{Turn: 1, StatePath: "work", CallID: id}, trace.AgentCallComplete{Verb: "task", Agent: "fixer", DurationMS: 90, TranscriptRef: ref}},
	} {
		if err := w.AppendPayload(&step.ev, step.p); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func onlyAgentCall(t *testing.T, r *Run) *Call {
	t.Helper()
	for _, turn := range r.Turns {
		for _, it := range turn.Items {
			if it.Call != nil && it.Call.Type == "agent" {
				return it.Call
			}
		}
	}
	t.Fatal("no agent call in the run")
	return nil
}

// trace show and trace view read an agent call's transcript from the
// sidecar its transcript_ref names: a row per event or message item, with
// the event's offset; a run of thinking-token counters is one row.
func TestTranscriptShown(t *testing.T) {
	r, err := Load(writeTranscriptRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	tr := onlyAgentCall(t, r).Transcript
	if tr == nil || tr.Error != "" {
		t.Fatalf("transcript %+v", tr)
	}
	at := func(ms int64) *int64 { return &ms }
	want := []Action{
		{AtMS: at(0), Kind: "system init"},
		{AtMS: at(20), Kind: "thinking", Text: "Check the file."},
		{AtMS: at(20), Kind: "tool_use", Text: `Read {"path":"a<b.go"}`},
		{AtMS: at(30), Kind: "tool_result", Text: "package a"},
		{AtMS: at(40), Kind: "thinking tokens", Text: "3"},
		{AtMS: at(41), Kind: "kitsoki validator_reject", Text: "text: too short"},
		{AtMS: at(90), Kind: "result success", Text: "done"},
	}
	if d := cmp.Diff(want, tr.Actions); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	var buf bytes.Buffer
	if err := Report(&buf, r, ReportOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"actions  6 events  transcripts/0123456789abcdef.jsonl", `   20ms tool_use         Read {"path":"a<b.go"}`} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, buf.String())
		}
	}
	var page bytes.Buffer
	if err := HTML(&page, r, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), []byte(`"kind":"tool_use"`)) || !bytes.Contains(page.Bytes(), []byte(`"agent actions ("`)) {
		t.Error("the page's data has no transcript actions")
	}
}

// A transcript_ref whose sidecar is missing, or that points outside
// transcripts/, is shown with the reason; nothing else is read.
func TestTranscriptUnreadable(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"transcripts/ffffffffffffffff.jsonl", "no such file"},
		{"../run.jsonl", "is not a sidecar under transcripts/"},
	} {
		r, err := Load(writeTranscriptRun(t, &trace.TranscriptRef{Format: "f", Path: tc.path, Events: 1, SchemaVersion: 1}))
		if err != nil {
			t.Fatal(err)
		}
		tr := onlyAgentCall(t, r).Transcript
		if tr == nil || !strings.Contains(tr.Error, tc.want) || len(tr.Actions) != 0 {
			t.Errorf("%s: transcript %+v, want an error saying %q", tc.path, tr, tc.want)
		}
		var buf bytes.Buffer
		if err := Report(&buf, r, ReportOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "cannot read: ") {
			t.Errorf("report does not say the sidecar cannot be read:\n%s", buf.String())
		}
	}
}
