package trace

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriterActive: the probe sees the trace writer's lock while it is
// open, and not after Close.
func TestWriterActive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.jsonl")
	if WriterActive(path) {
		t.Error("a missing file is not being written")
	}
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if !WriterActive(path) {
		t.Error("open writer not seen")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if WriterActive(path) {
		t.Error("closed writer still seen")
	}
}

// TestOpenJobsApply: job events fold into the jobs not ended, in start
// order; a list handed out before an update stays as it was.
func TestOpenJobsApply(t *testing.T) {
	var o OpenJobs
	o = o.Apply(JobStarted{Handler: "host.run", JobID: "j1", State: "a"})
	o = o.Apply(&JobStarted{Handler: "host.slow", JobID: "j2", State: "b"})
	before := o
	o = o.Apply(JobAwaitingInput{Handler: "host.slow", JobID: "j2", State: "b", Prompt: "which?"})
	o = o.Apply(&WorldUpdate{})
	want := OpenJobs{{Handler: "host.run", JobID: "j1", State: "a", Status: "running"}, {Handler: "host.slow", JobID: "j2", State: "b", Status: "awaiting_input", Prompt: "which?"}}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("after two starts and a question (-want +got):\n%s", diff)
	}
	if before[1].Status != "running" {
		t.Errorf("the list handed out before the question changed: %+v", before)
	}
	o = o.Apply(JobCompleted{JobID: "j1", Status: "done"})
	o = o.Apply(&JobCompleted{JobID: "j2", Status: "cancelled"})
	if o != nil {
		t.Errorf("after both ended = %+v, want nil", o)
	}
}
