package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// workflowClock is internal/base/clock's Clock on the workflow's clock: the
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
	var adHoc *AdHocCall
	at, err := InvokeRef{}, error(nil)
	if c.Invoke != nil {
		at, err = d.stories.Ref(d.ref, c.Invoke)
	}
	if c.Invoke == nil || err != nil {
		if adHoc, err = adHocCall(c, err); err != nil {
			return nil, err
		}
	}
	where := "at " + at.String()
	if adHoc != nil {
		where = "for " + adHoc.Purpose
	}
	ctx := workflow.WithActivityOptions(*d.cur, d.activityOptions(c, where))
	st, err := d.stories.Load(d.ref)
	if err != nil {
		return nil, err
	}
	seal := newSealer(st.Secrets)
	in := InvokeInput{Story: d.ref, Invoke: at, Namespace: c.Namespace, Args: Value{seal.seal(c.Args)},
		SessionID: c.SessionID, Turn: c.Turn, State: c.State, TurnState: c.TurnState, World: Value{seal.seal(c.World)},
		TitleOwned: c.Run.TitleOwned, Seq: d.sink.NextSeq(c.Turn), AdHoc: adHoc}
	var out InvokeResult
	if err := workflow.ExecuteActivity(ctx, InvokeActivity, in).Get(*d.cur, &out); err != nil {
		if reason := lostReason(err); reason != "" {
			return &host.Result{Err: d.lostCall(c, reason)}, nil
		}
		return nil, &host.TraceError{Err: fmt.Errorf("%s %s: activity %s: %w", c.Namespace, where, InvokeActivity, err)}
	}
	for _, e := range out.Events {
		if err := d.sink.Append(e.trace()); err != nil {
			return nil, &host.TraceError{Err: err}
		}
	}
	if err := d.takeEmits(c, &out); err != nil {
		return nil, &host.TraceError{Err: err}
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
