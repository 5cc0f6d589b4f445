package session

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

type recordingDispatcher struct{ got []string }

func (r *recordingDispatcher) Dispatch(_ context.Context, c *host.Call) (*host.Result, error) {
	r.got = append(r.got, c.Namespace)
	return &host.Result{Data: map[string]any{"live": c.Namespace}}, nil
}

// A retry of a call the crash cut (host.Call.Attempt > 1) goes to the
// live dispatcher without taking a journal position, so the calls after
// it still get their recorded answers; a recorded failure says it is the
// journal's, so the session does not retry it.
func TestAnsweringKeepsPositionsAcrossRetries(t *testing.T) {
	p := &Partial{Turn: 3, Calls: []Call{
		{Namespace: "host.a"},
		{Namespace: "host.b", Returned: true, Error: "b failed"},
	}}
	next := &recordingDispatcher{}
	d := Answering(next, trace.NewMemSink(), p, SideEffectsStop)
	ctx := context.Background()
	for _, c := range []*host.Call{
		{Namespace: "host.a", Turn: 3, Attempt: 1},
		{Namespace: "host.a", Turn: 3, Attempt: 2},
		{Namespace: "host.b", Turn: 3, Attempt: 1},
	} {
		res, err := d.Dispatch(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if c.Namespace == "host.b" {
			re, ok := res.Err.(*RecordedError)
			if !ok || re.Error() != "b failed" || !re.Replayed() {
				t.Errorf("host.b answered %+v, want the journal's recorded failure", res)
			}
		}
	}
	if d := cmp.Diff([]string{"host.a", "host.a"}, next.got); d != "" {
		t.Errorf("issued live (-want +got):\n%s", d)
	}
}
