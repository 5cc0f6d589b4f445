package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// workflowClock is internal/clock's Clock on the workflow's clock: the
// time recorded in history, the same on every replay.
type workflowClock struct{ cur *workflow.Context }

func (c workflowClock) Now() time.Time { return workflow.Now(*c.cur) }

// activityDispatcher is the session's orchestrator.Dispatcher inside the
// workflow: every call is a kitsoki.invoke activity, and the events the
// worker's host wrote are appended to the session's trace in order.
type activityDispatcher struct {
	cur     *workflow.Context // the coroutine taking the turn (the main loop or an update handler)
	stories *Stories
	ref     StoryRef
	sink    *trace.MemSink
	timeout time.Duration // start-to-close of a call that sets no with.timeout
	// heartbeat is the calls' heartbeat timeout; lostAttempts how many
	// times a call lost with its worker is issued in all (lost.go).
	heartbeat    time.Duration
	lostAttempts int
}

// Dispatch runs the call as an activity. A call that returned (data, a
// domain error or a fault) is never retried here (retry: on the invoke
// is the session's, as in a local run): agent calls cost money and are
// not idempotent. A call lost with its worker is issued again by the
// activity's retry policy; once it is not (external_side_effect, or its
// attempts spent), it fails with a LostCallError.
func (d *activityDispatcher) Dispatch(_ context.Context, c *host.Call) (*host.Result, error) {
	if c.Invoke == nil {
		return nil, fmt.Errorf("%s: a call no invoke asked for (the free-text router) cannot run in a Temporal session yet", c.Namespace)
	}
	at, err := d.stories.Ref(d.ref, c.Invoke)
	if err != nil {
		return nil, err
	}
	ctx := workflow.WithActivityOptions(*d.cur, d.activityOptions(c, at))
	in := InvokeInput{Story: d.ref, Invoke: at, Namespace: c.Namespace, Args: Value{c.Args},
		SessionID: c.SessionID, Turn: c.Turn, State: c.State, World: Value{c.World},
		TitleOwned: c.Run.TitleOwned, Seq: d.sink.NextSeq(c.Turn)}
	var out InvokeResult
	if err := workflow.ExecuteActivity(ctx, InvokeActivity, in).Get(*d.cur, &out); err != nil {
		if reason := lostReason(err); reason != "" {
			return &host.Result{Err: d.lostCall(c, reason)}, nil
		}
		return nil, &host.TraceError{Err: fmt.Errorf("%s at %s: activity %s: %w", c.Namespace, at, InvokeActivity, err)}
	}
	for _, e := range out.Events {
		if err := d.sink.Append(e.trace()); err != nil {
			return nil, &host.TraceError{Err: err}
		}
	}
	if out.Fault != "" {
		return nil, errors.New(out.Fault)
	}
	res := &host.Result{Data: out.Data.Map(), CallID: out.CallID}
	if out.Err != nil {
		res.Err = out.Err.Error()
	}
	return res, nil
}

// StartToCloseGrace is added to a call's hard deadline to make its
// activity's start-to-close timeout: the host's own deadline answers first
// (a timeout AskError, as in a local run); Temporal's timeout only catches
// a worker that died holding the call.
const StartToCloseGrace = 30 * time.Second

// startToClose is a call's start-to-close timeout: its with.timeout (else
// the session's default call timeout) plus StartToCloseGrace.
func (d *activityDispatcher) startToClose(c *host.Call) time.Duration {
	timeout := d.timeout
	if v, ok := c.Args["timeout"]; ok {
		if t, err := host.ParseTimeout(v); err == nil {
			timeout = t
		}
	}
	return timeout + StartToCloseGrace
}
