package cluster

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The histories in testdata/histories were recorded from a real Temporal
// dev server by integration/temporal's TestRecordedHistories
// (KITSOKI_RECORD_HISTORIES=1 make test-temporal); each names the
// stories directory its session ran from ("" for a session whose story
// is a bundle: those are in testdata/histories/blobs).
var histories = []struct{ file, dir string }{
	{"hello.json", storiesDir},
	{"freetext.json", "testdata"},
	{"emit.json", "testdata"},
	{"timer.json", "testdata"},
	{"bundle.json", ""},
}

// recordedBlobs is the blob store of the recorded sessions' bundles.
const recordedBlobs = "testdata/histories/blobs"

func replayer(t *testing.T, stories *Stories) worker.WorkflowReplayer {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions((&Workflow{Stories: stories}).Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	return r
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
}

// TestRecordedHistoriesReplay: the workflow code of this tree takes every
// recorded session's decisions again, command for command.
func TestRecordedHistoriesReplay(t *testing.T) {
	for _, h := range histories {
		t.Run(h.file, func(t *testing.T) {
			r := replayer(t, &Stories{Dir: h.dir, Blobs: &Blobs{Dir: recordedBlobs}, BundleDir: t.TempDir()})
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), filepath.Join("testdata/histories", h.file)); err != nil {
				t.Errorf("replay %s: %v", h.file, err)
			}
		})
	}
}

// TestReplayAgainstAChangedStoryIsNondeterministic replays the hello
// history against testdata/changed/hello, where the greeter is no longer
// asked: the workflow schedules no activity where the history has one,
// and the SDK fails the replay with its nondeterminism error (TMPRL1100).
// The content-hash check would refuse the changed story before any
// decision (as a worker does); the test turns it off (Stories.anyHash),
// which nothing outside this test can do.
func TestReplayAgainstAChangedStoryIsNondeterministic(t *testing.T) {
	r := replayer(t, &Stories{Dir: "testdata/changed", anyHash: true})
	err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), "testdata/histories/hello.json")
	if err == nil {
		t.Fatal("replay against the changed story succeeded; want the nondeterminism error")
	}
	if !strings.Contains(err.Error(), "[TMPRL1100]") {
		t.Errorf("error = %v\nwant the SDK's nondeterminism error [TMPRL1100]", err)
	}
}

// A bundled session replays from its bundle, whatever the story's files
// say now; a worker that cannot read the bundle fails the workflow task
// (Temporal retries it, on any worker) instead of failing the session.
func TestReplayWithoutTheBundleFailsTheTask(t *testing.T) {
	r := replayer(t, &Stories{Blobs: &Blobs{Dir: t.TempDir()}, BundleDir: t.TempDir()})
	err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), "testdata/histories/bundle.json")
	want := "session record-bundle: story stories/hello/app.yaml: the session's story bundle sha256:"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "blob missing") {
		t.Fatalf("error = %v\nwant the workflow task's panic, containing %q", err, want)
	}
}
