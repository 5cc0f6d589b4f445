package cluster

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// InvokeActivity is the name the invoke activity is registered under.
const InvokeActivity = "kitsoki.invoke"

// InvokeInput is one call of a session, as the workflow hands it to a
// worker: where the invoke is in the pinned story, what it was rendered
// with, and what the call needs of the session. It holds no resolved
// secret: the story's secrets in args and world are sealed (sealer).
type InvokeInput struct {
	Story     StoryRef  `json:"story"`
	Invoke    InvokeRef `json:"invoke"`
	Namespace string    `json:"namespace"`
	Args      Value     `json:"args"`
	SessionID string    `json:"session_id"`
	Turn      int64     `json:"turn"`
	State     string    `json:"state"`
	// TurnState is the state the call's turn began in (a cassette episode's
	// phase).
	TurnState  string `json:"turn_state,omitempty"`
	World      Value  `json:"world"`
	TitleOwned bool   `json:"title_owned,omitempty"`
	// Seq is the seq the session's trace gives its next event of Turn:
	// the events the call writes continue from it, so their seqs (and a
	// live call_id derived from one) are a local run's.
	Seq int `json:"seq"`
	// AdHoc is set for a call no invoke asked for (the free-text
	// router's); Invoke is then unset.
	AdHoc *AdHocCall `json:"ad_hoc,omitempty"`
}

// InvokeResult is what a call returned: the result data, the domain
// error, the trace events the host wrote, all with the story's secrets
// masked.
type InvokeResult struct {
	Data Value `json:"data"`
	// Err is the call's domain failure (bound as ok: false, last_error).
	Err *CallError `json:"err,omitempty"`
	// CallID is the call_id of the agent call that failed with Err.
	CallID string `json:"call_id,omitempty"`
	// Fault is the text of an infrastructure failure (the handler
	// returned an error instead of a result).
	Fault  string  `json:"fault,omitempty"`
	Events []Event `json:"events,omitempty"`
	// Emitted is how many emit_intent signals the answering attempt
	// (ActivityID, Attempt) sent; the workflow takes them before it
	// binds the result.
	Emitted    int    `json:"emitted,omitempty"`
	ActivityID string `json:"activity_id,omitempty"`
	Attempt    int32  `json:"attempt,omitempty"`
}

// CallError is a call's domain error across the activity boundary. Kind
// and Detail are set for an agent's failure (agent.AskError), so the
// workflow rebuilds the same error; Message is the error's text.
type CallError struct {
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Error rebuilds the error: an *agent.AskError when the call failed with
// one, whose text is Message either way.
func (e *CallError) Error() error {
	if e.Kind == "" {
		return errors.New(e.Message)
	}
	ae := &agent.AskError{Kind: agent.ErrorKind(e.Kind), Detail: e.Detail}
	if ae.Error() != e.Message { // an AskError with a cause and no detail
		ae.Detail = ""
		ae.Err = errors.New(e.Message[len("agent: "+e.Kind+": "):])
		if ae.Error() != e.Message {
			return errors.New(e.Message)
		}
	}
	return ae
}

func callError(err error, m *secret.Masker) *CallError {
	ce := &CallError{Message: m.String(err.Error())}
	if ae, ok := errors.AsType[*agent.AskError](err); ok && ae.Error() == err.Error() {
		ce.Kind, ce.Detail = string(ae.Kind), m.String(ae.Detail)
	}
	return ce
}

// Event is a trace event a call wrote, with its payload as a Value.
type Event struct {
	Turn       int64  `json:"turn"`
	Seq        int    `json:"seq"`
	TS         string `json:"ts"`
	Kind       string `json:"kind"`
	StatePath  string `json:"state_path,omitempty"`
	ParentTurn int64  `json:"parent_turn,omitempty"`
	CallID     string `json:"call_id,omitempty"`
	EpisodeID  string `json:"episode_id,omitempty"`
	MatchIdx   int    `json:"match_idx,omitempty"`
	Payload    Value  `json:"payload"`
}

func (e Event) trace() *trace.Event {
	return &trace.Event{Turn: e.Turn, TS: e.TS, Kind: e.Kind, StatePath: e.StatePath, ParentTurn: e.ParentTurn,
		CallID: e.CallID, EpisodeID: e.EpisodeID, MatchIdx: e.MatchIdx, Payload: e.Payload.Map()}
}

// Activities answers a session's calls on a worker. Its Invoke method is
// the kitsoki.invoke activity.
type Activities struct {
	// Stories loads the stories the sessions run.
	Stories *Stories
	// Config returns the runtime configuration the worker dispatches a
	// call of st with (agents, cassette, handlers, logger, clock). The
	// activity sets its trace sink and leaves Session nil: the session
	// lives in the workflow.
	Config func(st *story.Story) runtime.Config
	// Signal sends an agent's emit_intent to the session workflow; nil
	// uses the activity's client.
	Signal Signaller
	// SessionConfig, when set, is used instead of Config; it also gets the
	// id of the session the call belongs to (a worker replays its
	// --cassette per session).
	SessionConfig func(st *story.Story, sessionID string) runtime.Config
}

// Invoke dispatches one call through a host runtime.Open builds, and
// returns what it answered and the events it wrote.
func (a *Activities) Invoke(ctx context.Context, in InvokeInput) (_ *InvokeResult, ferr error) {
	defer nonRetryablePanic(&ferr)
	defer heartbeat(ctx)()
	st, inv, sch, err := a.call(in)
	if _, ok := errors.AsType[*BundleError](err); ok {
		// Not this call's failure: this worker cannot read the bundle
		// (another may: Temporal issues the call again).
		return nil, temporal.NewApplicationError(err.Error(), ErrTypeUnavailable)
	}
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "kitsoki.story", nil)
	}
	var cfg runtime.Config
	switch {
	case a.SessionConfig != nil:
		cfg = a.SessionConfig(st, in.SessionID)
	case a.Config != nil:
		cfg = a.Config(st)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	mask := secret.New(st.Secrets)
	sink := newCaptureSink(st, cfg.Clock, in.Seq)
	cfg.Session = nil
	cfg.AttachCalls = true
	cfg.Trace = runtime.Trace{Sink: sink}
	live := a.live(ctx, in, mask)
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(mask.String(fmt.Sprintf("open %s: %v", in.Story.Path, err)), "kitsoki.open", nil)
	}
	defer rt.Close()
	seal := newSealer(st.Secrets)
	res, derr := rt.Host().Dispatch(ctx, &host.Call{Namespace: in.Namespace, Args: seal.open(in.Args.Map()), Invoke: inv,
		SessionID: in.SessionID, Turn: in.Turn, State: in.State, TurnState: in.TurnState, World: seal.open(in.World.Map()),
		Run: host.RunEnv{TitleOwned: in.TitleOwned, Live: live}, Schema: sch, Purpose: adHocPurpose(in)})
	if err := stopped(ctx); err != nil {
		return nil, err
	}
	if te, ok := errors.AsType[*host.TraceError](derr); ok {
		return nil, temporal.NewNonRetryableApplicationError(mask.String(te.Error()), "kitsoki.trace", nil)
	}
	out := &InvokeResult{Emitted: live.emitted(), ActivityID: live.info.ActivityID, Attempt: live.info.Attempt}
	if derr != nil {
		out.Fault = mask.String(derr.Error())
	}
	if res != nil {
		if res.Data != nil {
			out.Data = Value{mask.Value(res.Data)}
		}
		if res.Err != nil {
			out.Err = callError(res.Err, mask)
		}
		out.CallID = res.CallID
	}
	if err := noteReissued(ctx, sink, in); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "kitsoki.trace", nil)
	}
	if out.Events, err = sink.events(); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "kitsoki.trace", nil)
	}
	return out, nil
}

// call finds the invoke in of the pinned story, or rebuilds an ad hoc
// one with its schema.
func (a *Activities) call(in InvokeInput) (*story.Story, *story.Invoke, *schema.Schema, error) {
	if in.AdHoc == nil {
		st, inv, err := a.Stories.Invoke(in.Story, in.Invoke)
		return st, inv, nil, err
	}
	st, err := a.Stories.Load(in.Story)
	if err != nil {
		return nil, nil, nil, err
	}
	inv, sch, err := in.AdHoc.call()
	return st, inv, sch, err
}

func adHocPurpose(in InvokeInput) string {
	if in.AdHoc == nil {
		return ""
	}
	return in.AdHoc.Purpose
}

func (a *Activities) live(ctx context.Context, in InvokeInput, mask *secret.Masker) *remoteLive {
	l := &remoteLive{world: in.World.Map(), signal: a.Signal, mask: mask}
	if activity.IsActivity(ctx) {
		l.info = activity.GetInfo(ctx)
	}
	if l.signal == nil {
		l.signal = clientSignaller
	}
	return l
}

// captureSink keeps the events one call writes (in memory, secrets
// masked by the trace encoder), numbering them from the session trace's
// next seq.
type captureSink struct {
	*trace.MemSink
	base int
}

func newCaptureSink(st *story.Story, c clock.Clock, base int) *captureSink {
	return &captureSink{MemSink: trace.NewMemSink(trace.WithSecrets(st.Secrets), trace.WithClock(c)), base: base}
}

func (c *captureSink) NextSeq(turn int64) int { return c.base + c.MemSink.NextSeq(turn) }

func (c *captureSink) Append(ev *trace.Event) error {
	err := c.MemSink.Append(ev)
	ev.Seq += c.base
	return err
}

func (c *captureSink) AppendPayload(ev *trace.Event, p trace.Payload) error {
	err := c.MemSink.AppendPayload(ev, p)
	ev.Seq += c.base
	return err
}

func (c *captureSink) events() ([]Event, error) {
	evs := c.MemSink.Events()
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, Event{Turn: e.Turn, Seq: c.base + e.Seq, TS: e.TS, Kind: e.Kind, StatePath: e.StatePath,
			ParentTurn: e.ParentTurn, CallID: e.CallID, EpisodeID: e.EpisodeID, MatchIdx: e.MatchIdx, Payload: Value{e.Payload}})
	}
	return out, nil
}
