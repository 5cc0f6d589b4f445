package orchestrator

import (
	"encoding/json"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// A background job's agent call writes its transcript at once, through
// the session's sink (the job's own events wait for its completion turn;
// a sidecar is a file, not a line, so it does not).
func TestJobSinkKeepsTranscriptsInTheSessionSink(t *testing.T) {
	mem := trace.NewMemSink()
	buf := &jobSink{side: mem}
	tr := &trace.Transcript{Format: "f", Events: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	ref, err := trace.WriteTranscript(buf, "job1call", tr)
	if err != nil || ref == nil || ref.Path != "transcripts/job1call.jsonl" {
		t.Fatalf("ref %+v, %v", ref, err)
	}
	if got := mem.Sidecars(); len(got) != 1 || string(got[0].Data) != "{\"a\":1}\n" {
		t.Errorf("session sink's sidecars %v", got)
	}
	if ref, err := trace.WriteTranscript(&jobSink{side: trace.NewDiscard()}, "x", tr); ref != nil || err != nil {
		t.Errorf("a session sink that keeps none: %+v, %v", ref, err)
	}
}
