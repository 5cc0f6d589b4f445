package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Lost calls: a call whose worker died holding it records no result. The
// activity heartbeats while the call runs, so the server notices a dead
// worker after the heartbeat timeout (not only at start-to-close) and
// schedules the call again, on any worker of the queue, as a resumed
// local session issues again a call it had in flight. Every failure the
// activity itself returns is a non-retryable application error, so the
// only attempts the server makes again are lost ones.
const (
	// DefaultHeartbeatTimeout is the heartbeat timeout of a call when
	// neither the session input nor the worker sets one.
	DefaultHeartbeatTimeout = 10 * time.Second
	// DefaultLostCallAttempts is how many times a call is issued in all
	// when its workers keep dying with it (the first included).
	DefaultLostCallAttempts = 3
	// ErrTypeLost is the (retryable) application error type of a call
	// whose worker stopped during it: its answer is not the call's.
	ErrTypeLost = "kitsoki.lost"
	// ErrTypeUnavailable is the (retryable) application error type of a
	// call whose worker cannot read the session's story bundle: the call
	// did not run there, so another worker takes it.
	ErrTypeUnavailable = "kitsoki.unavailable"
	// KindCallReissued is the event the activity writes after the events
	// of a call it answered on a later attempt than the first (its
	// earlier attempts were lost with their workers).
	KindCallReissued = trace.KindCallReissued
	// FailureKindLost is the failure kind of a lost call that is not
	// issued again (LostCallError); retry: never lists it.
	FailureKindLost = "lost"
)

// heartbeatEvery is how often a running call heartbeats, and the most a
// worker holds a heartbeat back (NewWorker's MaxHeartbeatThrottleInterval):
// a fifth of the timeout, so a few late beats (a loaded worker) are not a
// death.
func heartbeatEvery(timeout time.Duration) time.Duration {
	return max(timeout/5, 50*time.Millisecond)
}

// heartbeat records a heartbeat every heartbeatEvery of the activity's
// heartbeat timeout until the returned stop is called.
func heartbeat(ctx context.Context) (stop func()) {
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(heartbeatEvery(timeout))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-exited }
}

// activityOptions are a call's activity options: its start-to-close
// timeout, the session's heartbeat timeout, and a retry policy that
// re-issues a lost call up to lostAttempts times in all, except an
// external_side_effect invoke, issued once.
func (d *activityDispatcher) activityOptions(c *host.Call, where string) workflow.ActivityOptions {
	attempts := int32(d.lostAttempts)
	if c.Invoke != nil && c.Invoke.ExternalSideEffect {
		attempts = 1
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: d.startToClose(c),
		HeartbeatTimeout:    d.heartbeat,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: attempts, InitialInterval: time.Second,
			BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
		Summary: c.Namespace + " " + where,
	}
}

// lostReason says why err means the call was lost with its worker (a
// heartbeat or start-to-close timeout, a worker that stopped during it),
// or "" when it is another failure.
func lostReason(err error) string {
	if te, ok := errors.AsType[*temporal.TimeoutError](err); ok {
		switch te.TimeoutType() {
		case enumspb.TIMEOUT_TYPE_HEARTBEAT:
			return "no heartbeat within the heartbeat timeout"
		case enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
			return "no result within the start-to-close timeout"
		}
	}
	if ae, ok := errors.AsType[*temporal.ApplicationError](err); ok {
		switch ae.Type() {
		case ErrTypeLost:
			return "its worker stopped during the call"
		case ErrTypeUnavailable:
			return "its worker could not read the session's story: " + ae.Message()
		}
	}
	return ""
}

// LostCallError is the failure of a call lost with its worker and not
// issued again: an external_side_effect invoke, or one whose attempts are
// spent. It fails like any call error (nothing bound, last_error,
// on_error); retry: does not retry it.
type LostCallError struct {
	Namespace  string
	Call       string // the invoke's id:, "" when it has none
	Reason     string
	Attempts   int
	SideEffect bool
}

func (e *LostCallError) Error() string {
	name := e.Namespace
	if e.Call != "" {
		name += " (call " + e.Call + ")"
	}
	if e.SideEffect {
		return fmt.Sprintf("%s was lost with its worker (%s) and is marked external_side_effect: true, so it may have taken effect already; it is not issued again (handle the failure with on_error:, or drop external_side_effect: if the call is safe to repeat)",
			name, e.Reason)
	}
	return fmt.Sprintf("%s was lost with its worker %d times (last: %s); it is not issued again", name, e.Attempts, e.Reason)
}

// FailureKind is the retry: kind of the failure: FailureKindLost.
func (e *LostCallError) FailureKind() string { return FailureKindLost }

// lostCall turns a lost call's activity error into its call error.
func (d *activityDispatcher) lostCall(c *host.Call, reason string) *LostCallError {
	e := &LostCallError{Namespace: c.Namespace, Reason: reason, Attempts: d.lostAttempts}
	if call, ok := c.Args["call"].(string); ok {
		e.Call = call
	}
	if c.Invoke != nil && c.Invoke.ExternalSideEffect {
		e.SideEffect, e.Attempts = true, 1
	}
	return e
}

// Sleep waits on a durable workflow timer: a retry: backoff inside a
// session workflow (clock.Sleeper).
func (c workflowClock) Sleep(_ context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return workflow.Sleep(*c.cur, d)
}

// stopped is the retryable ErrTypeLost error when the call's context
// ended before the activity returned (its worker is stopping, or the
// server already gave up on the attempt): what the host answered then is
// not the call's answer.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return temporal.NewApplicationError("the call's worker stopped during it ("+context.Cause(ctx).Error()+"): the call is issued again", ErrTypeLost)
}

// noteReissued writes KindCallReissued after the call's events when this
// attempt is not the first: the earlier ones were lost with their workers.
func noteReissued(ctx context.Context, sink *captureSink, in InvokeInput) error {
	n := activity.GetInfo(ctx).Attempt
	if n <= 1 {
		return nil
	}
	return sink.AppendPayload(&trace.Event{Turn: in.Turn, StatePath: in.State},
		trace.CallReissued{Namespace: in.Namespace, Attempt: int(n)})
}

// nonRetryablePanic turns a panic of the activity into a non-retryable
// application error: a bug answers the same on every worker, so only a
// lost call is ever issued again.
func nonRetryablePanic(err *error) {
	if r := recover(); r != nil {
		*err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("the invoke activity panicked: %v", r), "kitsoki.panic", nil)
	}
}
