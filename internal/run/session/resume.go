package session

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/plugin"
)

// SideEffects says what a resume does with an external_side_effect call
// that was in flight when the session stopped.
type SideEffects string

const (
	// SideEffectsStop stops the resume, naming the call (the default).
	SideEffectsStop SideEffects = ""
	// SideEffectsRetry issues the call again.
	SideEffectsRetry SideEffects = "retry"
	// SideEffectsSkip goes on without it: the call returns no data.
	SideEffectsSkip SideEffects = "skip"
)

// ParseSideEffects reads --resume-side-effects.
func ParseSideEffects(s string) (SideEffects, error) {
	switch s {
	case "", "stop":
		return SideEffectsStop, nil
	case "retry":
		return SideEffectsRetry, nil
	case "skip":
		return SideEffectsSkip, nil
	}
	return "", fmt.Errorf("--resume-side-effects %q: want retry or skip (or stop, the default)", s)
}

// SideEffectError stops a resume: an external_side_effect call was in
// flight when the session stopped.
type SideEffectError struct {
	Turn      int64
	State     string
	Namespace string
	Call      string // the invoke's id:, "" when it has none
}

func (e *SideEffectError) Error() string {
	name := e.Namespace
	if e.Call != "" {
		name += " (call " + e.Call + ")"
	}
	return fmt.Sprintf("resume stopped: turn %d in %s: %s was in flight when the session stopped and is marked external_side_effect: true, so it may have taken effect already; pass --resume-side-effects=retry to issue it again or --resume-side-effects=skip to go on without it",
		e.Turn, e.State, name)
}

// CheckSideEffects refuses to resume p when a call it had in flight is an
// external_side_effect invoke of st and policy is SideEffectsStop.
func (p *Partial) CheckSideEffects(st *story.Story, policy SideEffects) error {
	if p == nil || policy != SideEffectsStop {
		return nil
	}
	for _, c := range p.Calls {
		if c.Returned {
			continue
		}
		for _, inv := range invokes(st) {
			if callsName(inv, c.Namespace) && (c.Call == "" || inv.ID == c.Call) && inv.ExternalSideEffect {
				return &SideEffectError{Turn: p.Turn, State: c.State, Namespace: c.Namespace, Call: c.Call}
			}
		}
	}
	return nil
}

// callsName reports whether inv may have made a call to namespace: its
// name, or, templated, one its literal text before {{ begins.
func callsName(inv *story.Invoke, namespace string) bool {
	if inv.NameTemplate == nil {
		return inv.Name == namespace
	}
	prefix, _, _ := strings.Cut(inv.Name, "{{")
	return strings.HasPrefix(namespace, prefix)
}

// invokes lists every invoke of st.
func invokes(st *story.Story) []*story.Invoke {
	var out []*story.Invoke
	add := func(effs []*story.Effect) {
		for _, e := range effs {
			if e.Invoke != nil {
				out = append(out, e.Invoke)
			}
		}
	}
	for _, s := range st.States {
		add(s.OnEnter)
		for _, arms := range s.On {
			for _, a := range arms {
				add(a.Effects)
			}
		}
	}
	return out
}

// Kinds of the events the answering dispatcher writes.
const (
	// KindCallReplayed: a call of the unfinished turn answered from the
	// journal instead of being issued again.
	KindCallReplayed = trace.KindCallReplayed
	// KindCallSkipped: an external_side_effect call in flight at the crash,
	// not issued again (--resume-side-effects=skip).
	KindCallSkipped = trace.KindCallSkipped
)

// Answering wraps the dispatcher of a resumed session: in the unfinished
// turn p, the k-th call dispatched gets the answer the journal recorded
// for the k-th call when that call returned before the crash, and is
// issued to next otherwise (an external_side_effect call in flight is
// skipped under SideEffectsSkip). Every other turn goes to next.
func Answering(next orchestrator.Dispatcher, sink host.Sink, p *Partial, policy SideEffects) orchestrator.Dispatcher {
	return &answering{next: next, sink: sink, p: p, policy: policy}
}

type answering struct {
	next   orchestrator.Dispatcher
	sink   host.Sink
	p      *Partial
	policy SideEffects
	mu     sync.Mutex
	k      int
}

// RecordedError is the error of a call answered from the journal whose
// recorded answer was a failure.
type RecordedError struct{ Msg string }

func (e *RecordedError) Error() string { return e.Msg }

// Replayed marks the answer as the journal's: its invoke's retry: ran
// when it was recorded, so the session does not retry it.
func (e *RecordedError) Replayed() bool { return true }

func (a *answering) Dispatch(ctx context.Context, call *host.Call) (*host.Result, error) {
	if call.Turn != a.p.Turn || call.Attempt > 1 {
		// A retry is the same position as its first attempt.
		return a.next.Dispatch(ctx, call)
	}
	a.mu.Lock()
	k := a.k
	a.k++
	a.mu.Unlock()
	if k >= len(a.p.Calls) || a.p.Calls[k].Namespace != call.Namespace {
		return a.next.Dispatch(ctx, call)
	}
	c := a.p.Calls[k]
	switch {
	case c.Returned:
		if err := a.note(call, trace.CallReplayed{Namespace: call.Namespace, Position: k}); err != nil {
			return nil, err
		}
		res := &host.Result{Data: cloneMap(c.Data)}
		if c.Error != "" {
			res.Err = &RecordedError{Msg: c.Error}
		}
		return res, nil
	case a.policy == SideEffectsSkip && call.Invoke != nil && call.Invoke.ExternalSideEffect:
		if err := a.note(call, trace.CallSkipped{Namespace: call.Namespace, Position: k}); err != nil {
			return nil, err
		}
		return &host.Result{}, nil
	}
	return a.next.Dispatch(ctx, call)
}

func (a *answering) note(call *host.Call, p trace.Payload) error {
	if err := a.sink.AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State}, p); err != nil {
		return &host.TraceError{Err: err}
	}
	return nil
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return orchestrator.DeepCopy(m).(map[string]any)
}

// Resume brings a session that runtime.Open restored from j to where the
// journal left off, before any input is read: it writes the
// kitsoki.resumed marker and takes the unfinished turn again with its
// recorded input (the answers of its finished calls come from the journal,
// see Answering). out is the redone turn's outcome, nil when there was
// none; for a session whose turn 0 never finished, Start runs again.
func Resume(ctx context.Context, sess *orchestrator.Session, sink host.Sink, j *Journal) (*orchestrator.Outcome, error) {
	p := j.Partial
	marker := trace.Resumed{AfterTurn: j.Turn, Redo: p != nil}
	turn := j.Turn + 1
	if p != nil {
		turn = p.Turn
		marker.Reissued = inFlight(p)
	}
	if !j.Started {
		turn = 0
		marker.AfterTurn = -1
	}
	if err := sink.AppendPayload(&plugin.Event{Turn: turn, StatePath: j.State}, marker); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	switch {
	case p == nil && !j.Started: // killed before turn 0 wrote a line
		return sess.Start(ctx)
	case p == nil:
		return nil, nil
	case p.Turn == 0:
		return sess.Start(ctx)
	}
	out, err := Take(ctx, sess, p.Turn, p.Input)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return out, nil
}

// inFlight lists the namespaces of p's calls that had not returned.
func inFlight(p *Partial) []string {
	out := []string{}
	for _, c := range p.Calls {
		if !c.Returned {
			out = append(out, c.Namespace)
		}
	}
	return out
}
