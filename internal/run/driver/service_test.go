package driver

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

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
