package orchestrator

import (
	"context"
	"errors"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// KindCallRetry is the event written before a call that failed is issued
// again under its invoke's retry: (payload trace.CallRetry).
const KindCallRetry = trace.KindCallRetry

// FailureKind is the retry: on: kind of a call's failure: its own when it
// names one (a FailureKind method: a Temporal session's lost call), the
// agent error's kind, else story.RetryHostError.
func FailureKind(err error) string {
	if k, ok := errors.AsType[interface {
		error
		FailureKind() string
	}](err); ok {
		return k.FailureKind()
	}
	if ae, ok := errors.AsType[*agent.AskError](err); ok {
		return string(ae.Kind)
	}
	return story.RetryHostError
}

// dispatchRetrying dispatches call, and again while it fails with a kind
// its invoke's retry: lists and attempts are left, waiting the backoff on
// the session's clock (a Temporal session's clock sleeps on a workflow
// timer). A trace error is never retried. The last attempt's answer is
// the call's. A failure answered from a journal is not retried.
func (s *Session) dispatchRetrying(ctx context.Context, t *turnCtx, inv *story.Invoke, call *host.Call) (res *host.Result, derr error) {
	// Every attempt saw the same World: it was kept unless no attempt
	// kept it.
	kept := false
	defer func() {
		if kept && res != nil && res.KeptNoWorld {
			r := *res
			r.KeptNoWorld = false
			res = &r
		}
	}()
	for n := 1; ; n++ {
		c := *call
		c.Attempt = n
		res, derr = s.host.Dispatch(ctx, &c)
		kept = kept || res == nil || !res.KeptNoWorld
		failure := derr
		if derr == nil && res != nil {
			failure = res.Err
		}
		r := inv.Retry
		if failure == nil || isTraceErr(derr) || replayed(failure) || r == nil || n >= r.Attempts || !r.Retries(FailureKind(failure)) {
			return res, derr
		}
		wait := r.Wait(n + 1)
		p := trace.CallRetry{Namespace: inv.Name, Attempt: n + 1, Attempts: r.Attempts,
			FailureKind: FailureKind(failure), Error: failure.Error(), WaitMS: wait.Milliseconds(), Call: callOf(call.Args)}
		if err := s.emit(t, p); err != nil {
			return nil, err
		}
		if err := clock.Sleep(ctx, s.clock, wait); err != nil {
			return res, derr // the run is ending: the failure stands
		}
	}
}

// replayed reports a failure answered from a journal (a resumed session's
// recorded answer): its retries ran when it was recorded.
func replayed(err error) bool {
	r, ok := errors.AsType[interface {
		error
		Replayed() bool
	}](err)
	return ok && r.Replayed()
}
