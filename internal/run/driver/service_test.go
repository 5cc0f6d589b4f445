package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// helloSessions is the session API over a new sessions directory, the
// demo story's agents replayed from its cassette.
func helloSessions(t *testing.T) (*Sessions, string) {
	t.Helper()
	app, err := filepath.Abs("../../../stories/hello/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(filepath.Dir(app), "cassettes", "demo.yaml")
	return &Sessions{Store: session.Store{Dir: filepath.Join(t.TempDir(), "sessions")},
		Load: func(path string) (*story.Story, error) {
			return story.Load(path, story.WithReplayedHandlers(replay.HandlerNames(cas)...))
		},
		Config: func(st *story.Story) (runtime.Config, func() error, error) {
			c, err := replay.Load(cas, cassette.WithSecrets(st.Secrets))
			return runtime.Config{Cassette: c}, nil, err
		}}, app
}

// TestSessionsHooksAndFinish: OnDispatch is told of the calls a session
// makes; an intent's slots are journaled as a line that reads back; a
// session that finished is in the index as finished at once, is looked at
// with Status, and a resume of it is refused with ErrFinished.
func TestSessionsHooksAndFinish(t *testing.T) {
	ctx := context.Background()
	svc, app := helloSessions(t)
	var calls []string
	o, _, err := svc.Create(ctx, CreateRequest{Story: app, ID: "s1", OnDispatch: func(c *host.Call) func() {
		calls = append(calls, c.Namespace)
		return func() {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Continue(ctx, Intent("greet", map[string]any{"name": "Ada Lovelace", "style": "formal"})); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || !strings.HasPrefix(calls[0], host.AgentNamespace) {
		t.Errorf("calls told = %q, want the greeting's agent call", calls)
	}
	tr, err := o.Trace()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tr), `"input":"greet name=\"Ada Lovelace\" style=formal"`) {
		t.Errorf("the journal lacks the intent's line:\n%s", tr)
	}
	f, err := o.Continue(ctx, Intent("bye", nil))
	if err != nil || !f.Done {
		t.Fatalf("bye: %v %+v", err, f)
	}
	if m, err := svc.Store.Get("s1"); err != nil || !m.Finished || m.State != "farewell" {
		t.Errorf("the index before close: %+v %v, want finished in farewell", m, err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	m, st, err := svc.Status(ctx, "s1")
	if err != nil || !st.Done || st.State != "farewell" || st.Turn != 2 || m.ID != "s1" {
		t.Errorf("Status = %+v %+v %v", m, st, err)
	}
	if _, _, err := svc.Resume(ctx, ResumeRequest{Ref: "s1"}); !errors.Is(err, ErrFinished) ||
		!strings.Contains(err.Error(), `session s1 finished in state "farewell" at turn 2; fork it to go on`) {
		t.Errorf("resume of a finished session: %v", err)
	}
}

// TestInspectReportsTheJournalsJobs: a background job still running is
// reported by an inspect from outside the process that runs it (the
// journal's snapshot records it), with its status while that process
// holds the session, and as lost once the process is gone with the job
// not ended; a session with no job reports none.
func TestInspectReportsTheJournalsJobs(t *testing.T) {
	ctx := context.Background()
	app, err := filepath.Abs("testdata/bgjob/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sessions")
	svc := &Sessions{Store: session.Store{Dir: dir}, Load: func(path string) (*story.Story, error) { return story.Load(path) },
		Config: func(*story.Story) (runtime.Config, func() error, error) { return runtime.Config{}, nil, nil }}
	o, _, err := svc.Create(ctx, CreateRequest{Story: app, ID: "bg1"})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if f, err := svc.Inspect(ctx, "bg1"); err != nil || len(f.Jobs) != 0 {
		t.Fatalf("inspect before the job: %v %+v", err, f.Jobs)
	}
	if _, err := o.Continue(ctx, Intent("go", nil)); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Inspect(ctx, "bg1")
	if err != nil {
		t.Fatal(err)
	}
	want := []FrameJob{{Handler: "host.run", Status: "running"}}
	if diff := cmp.Diff(want, f.Jobs, cmpopts.IgnoreFields(FrameJob{}, "ID")); diff != "" || len(f.Jobs) != 1 || f.Jobs[0].ID == "" {
		t.Errorf("jobs while the session is held, from the job's event (-want +got):\n%s", diff)
	}
	// Turn 64 writes a snapshot: the journal is read from it on, so the
	// job is known from the snapshot alone.
	for range 63 {
		if _, err := o.Continue(ctx, Intent("wait", nil)); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := o.Trace()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tr), `"turn":64,"seq"`) || !strings.Contains(string(tr), `"jobs":[{"handler":"host.run","job_id":"`+f.Jobs[0].ID+`","state":"waiting","status":"running"}]`) {
		t.Fatalf("turn 64's snapshot does not record the job:\n%s", tr[max(0, len(tr)-600):])
	}
	f, err = svc.Inspect(ctx, "bg1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, f.Jobs, cmpopts.IgnoreFields(FrameJob{}, "ID")); diff != "" {
		t.Errorf("jobs while the session is held, from the snapshot (-want +got):\n%s", diff)
	}

	// The process is gone: a copy of the journal as it stood, in a store
	// of its own, is what a crash leaves (no process holds it).
	m := o.Meta()
	crashed := &Sessions{Store: session.Store{Dir: filepath.Join(t.TempDir(), "sessions")}, Load: svc.Load, Config: svc.Config}
	m.Trace = filepath.Join(crashed.Store.Dir, "bg1.jsonl")
	if err := os.MkdirAll(crashed.Store.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.Trace, tr, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Store.Put(m); err != nil {
		t.Fatal(err)
	}
	f, err = crashed.Inspect(ctx, "bg1")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) != 1 || f.Jobs[0].Status != "lost" || f.Jobs[0].Handler != "host.run" {
		t.Errorf("jobs of a session whose process is gone = %+v, want the job lost", f.Jobs)
	}
}

// TestOneShotContinueWaitsForItsJobs: Sessions.Continue (kitsoki session
// continue, whose process exits once it answers) waits for the
// background job its turn started and answers the session as the job
// left it; an open session's Continue (the pool's, whose process goes on)
// answers at once, the job not delivered, and Settled then waits for it
// and delivers it (also when the job ended before the frame was made).
func TestOneShotContinueWaitsForItsJobs(t *testing.T) {
	ctx := context.Background()
	app, err := filepath.Abs("testdata/bgquick/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := &Sessions{Store: session.Store{Dir: filepath.Join(t.TempDir(), "sessions")}, Load: func(path string) (*story.Story, error) { return story.Load(path) },
		Config: func(*story.Story) (runtime.Config, func() error, error) { return runtime.Config{}, nil, nil }}
	o, f, err := svc.Create(ctx, CreateRequest{Story: app, ID: "q1"})
	if err != nil {
		t.Fatal(err)
	}
	// The job may have ended already (it echoes), but only Settled
	// delivers it.
	if f.State != "warming" {
		t.Fatalf("create: state %q, jobs %+v; want warming, its job not delivered", f.State, f.Jobs)
	}
	if f, err = o.Settled(ctx, f); err != nil {
		t.Fatal(err)
	}
	if f.State != "idle" || len(f.Jobs) != 0 || f.Outcome != "started" || f.Session.Turn != 1 {
		t.Errorf("create, settled: state %q, jobs %+v, outcome %q, turn %d; want idle, no job, started, turn 1", f.State, f.Jobs, f.Outcome, f.Session.Turn)
	}
	if g, err := o.Settled(ctx, f); err != nil || g != f {
		t.Errorf("settling with no job running: %v, a new frame %v", err, g != f)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	f, err = svc.Continue(ctx, ResumeRequest{Ref: "q1"}, Intent("build", nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.State != "done" || !f.Done || len(f.Jobs) != 0 || f.Outcome != "transitioned" || f.From != "idle" || f.Session.Turn != 3 {
		t.Errorf("continue: state %q done %v, jobs %+v, outcome %q from %q, turn %d; want done, no job, transitioned from idle, turn 3",
			f.State, f.Done, f.Jobs, f.Outcome, f.From, f.Session.Turn)
	}
	if !strings.Contains(string(f.Events), `"Build done."`) || !slices.Equal(f.Says, []string{"Build done."}) {
		t.Errorf("the frame's says %q, or its events, lack the job turn's say:\n%s", f.Says, f.Events)
	}
	if g, err := svc.Inspect(ctx, "q1"); err != nil || g.State != "done" || len(g.Jobs) != 0 {
		t.Errorf("inspect after the continue: %v, state %q, jobs %+v", err, g.State, g.Jobs)
	}
}
