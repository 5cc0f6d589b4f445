package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// JobIntent is the intent name of the turns that deliver what happened to
// a background job (its question, its end), as turn.input records it.
const JobIntent = "__job__"

// The world keys a background job writes: last_job_id when it starts,
// all three when its completion is delivered.
const (
	WorldLastJobID     = "last_job_id"
	WorldLastJobStatus = "last_job_status"
	WorldLastJobResult = "last_job_result"
)

// WithJobs sets the scheduler the session's background jobs run on (by
// default one of its own on the session's clock).
func WithJobs(j *jobs.Scheduler) Option { return func(s *Session) { s.jobs = j } }

// WithInbox sets the inbox the session posts job notifications to (by
// default one of its own).
func WithInbox(b *inbox.Inbox) Option { return func(s *Session) { s.inbox = b } }

// Jobs returns the session's background-job scheduler.
func (s *Session) Jobs() *jobs.Scheduler { return s.jobs }

// Inbox returns the session's inbox.
func (s *Session) Inbox() *inbox.Inbox { return s.inbox }

// Close cancels the session's background jobs that still run and waits
// for them (every process they started is reaped).
func (s *Session) Close() {
	if s.jobs != nil {
		s.jobs.Close()
	}
}

// running is a started job's context the session keeps until its
// completion is delivered.
type running struct {
	inv   *story.Invoke
	name  string // the handler: inv.Name, rendered when templated
	buf   *jobSink
	where string
}

// startJob submits a background invoke (the same-turn rule: it starts when
// its effect runs, so the effects after it see its job id). bind: entries
// reading job_id get the id now, and last_job_id always.
func (s *Session) startJob(t *turnCtx, inv *story.Invoke, name string, args map[string]any, where string) error {
	if err := s.emit(t, trace.HarnessCalled{Namespace: name, Args: args, Background: true}); err != nil {
		return err
	}
	if err := s.emit(t, trace.HarnessDispatched{Namespace: name, Args: args, Background: true}); err != nil {
		return err
	}
	world := make(map[string]any, len(s.world))
	for k, v := range s.world {
		world[k] = DeepCopy(v)
	}
	s.jobsStarted++
	buf := &jobSink{now: s.sink.Now, base: jobSeqBase * s.jobsStarted, side: s.sink}
	jobArgs, _ := DeepCopy(args).(map[string]any) // the job's own: the trace keeps args
	call := &host.Call{Namespace: name, Args: jobArgs, Invoke: inv, SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world, Sink: buf}
	disp := s.host
	id, err := s.jobs.Submit(jobs.Spec{Handler: name, Origin: s.state, Call: inv.ID, Run: func(ctx context.Context) jobs.Result {
		res, err := disp.Dispatch(ctx, call)
		switch {
		case err != nil:
			return jobs.Result{Infra: err}
		case res == nil:
			return jobs.Result{}
		}
		return jobs.Result{Data: res.Data, Err: res.Err}
	}})
	if err != nil {
		return fault("%s: invoke %s: %w", where, name, err)
	}
	if s.runningJobs == nil {
		s.runningJobs = map[string]*running{}
	}
	s.runningJobs[id] = &running{inv: inv, name: name, buf: buf, where: where}
	started := trace.JobStarted{Call: inv.ID, Handler: name, JobID: id, State: s.state}
	if err := s.emit(t, started); err != nil {
		return err
	}
	s.openJobs = s.openJobs.Apply(started)
	keys := []string{}
	for _, b := range inv.Bind {
		if b.Template == nil && b.Path == "job_id" && b.Key != WorldLastJobID {
			keys = append(keys, b.Key)
		}
	}
	keys = append(keys, WorldLastJobID)
	for _, k := range keys {
		s.setWorld(k, id)
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{k: id}}); err != nil {
			return err
		}
	}
	s.post(inbox.Notification{Severity: inbox.Info, Kind: "job", Title: "Job started: " + name, State: s.state, JobID: id})
	return nil
}

// post adds a notification; the session's own are always valid.
func (s *Session) post(n inbox.Notification) {
	if _, err := s.inbox.Add(n); err != nil {
		s.logger.Error("inbox", "err", err)
	}
}

// Deliver applies what has happened to the session's background jobs
// since the last delivery, one turn per notice (a question asked, a job
// ended), in the order the jobs' clock says. Turn delivers before taking
// the user's turn; a caller that waits for jobs (a flow after advancing
// its clock) calls Settle.
func (s *Session) Deliver(ctx context.Context) ([]*Outcome, error) {
	if !s.started || s.jobs == nil {
		return nil, nil
	}
	var out []*Outcome
	for _, n := range s.jobs.Take() {
		o, err := s.deliverJob(ctx, n)
		if err != nil {
			return out, err
		}
		out = append(out, o)
	}
	return out, nil
}

// Settle waits until every background job is finished, parked on the
// clock or waiting for an answer, and delivers what they did, until
// nothing more happens (a completion chain may start new jobs).
func (s *Session) Settle(ctx context.Context) ([]*Outcome, error) {
	if !s.started || s.jobs == nil {
		return nil, nil
	}
	var out []*Outcome
	for {
		if err := s.jobs.Settle(ctx); err != nil {
			return out, err
		}
		if !s.jobs.Pending() {
			return out, nil
		}
		o, err := s.Deliver(ctx)
		out = append(out, o...)
		if err != nil {
			return out, err
		}
	}
}

// deliverJob runs one notice's turn.
func (s *Session) deliverJob(ctx context.Context, n jobs.Notice) (*Outcome, error) {
	s.turn++
	t := s.newTurn(s.turn, JobIntent, nil)
	t.noSettle = true
	input := fmt.Sprintf("[job] %s %s", n.Job.ID, n.Job.Status)
	if err := s.emit(t, trace.TurnInput{Input: input, Intent: JobIntent}); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnStart{Turn: t.n, Input: input}); err != nil {
		return nil, err
	}
	if err := s.projectIDE(ctx, t); err != nil {
		return nil, err
	}
	var out *Outcome
	var err error
	if n.Kind == jobs.NoticeAwaiting {
		out, err = s.runTurn(ctx, t, func() error { return s.jobAsks(t, n) })
	} else {
		out, err = s.runTurn(ctx, t, func() error { return s.jobEnded(t, n) })
	}
	if err != nil {
		return nil, err
	}
	out.Job = n.Job.ID
	return out, s.sink.EndTurn()
}

// jobAsks records a job's question and posts an action_required
// notification pointing at the state that started it.
func (s *Session) jobAsks(t *turnCtx, n jobs.Notice) error {
	p := trace.JobAwaitingInput{Handler: n.Job.Handler, JobID: n.Job.ID, State: n.Job.Origin}
	if q := n.Job.Question; q != nil {
		p.Prompt = q.Prompt
		if len(q.Fields) > 0 {
			p.Fields = map[string]any{}
			for k, v := range q.Fields {
				p.Fields[k] = v
			}
		}
	}
	if err := s.emit(t, p); err != nil {
		return err
	}
	s.openJobs = s.openJobs.Apply(p)
	s.post(inbox.Notification{Severity: inbox.ActionRequired, Kind: "job", Title: fmt.Sprintf("Job %s needs an answer: %s", n.Job.ID, p.Prompt),
		State: n.Job.Origin, JobID: n.Job.ID})
	return nil
}

// jobEnded applies a job's completion: its buffered trace, the result,
// the injected world keys and binds, then its on_complete chain; a target:
// in the chain (or the invoke's on_error, for a failed job) is taken after
// the chain's own calls are dispatched.
func (s *Session) jobEnded(t *turnCtx, n jobs.Notice) error {
	r := s.runningJobs[n.Job.ID]
	delete(s.runningJobs, n.Job.ID)
	if r == nil {
		return fault("background job %s ended, but this session did not start it", n.Job.ID)
	}
	if err := r.buf.flush(s.sink, t.n); err != nil {
		return &host.TraceError{Err: err}
	}
	inv, name := r.inv, r.name
	callErr := jobError(n)
	if err := s.traceJobEnd(t, n, name, callErr); err != nil {
		return err
	}
	if err := s.applyJobResult(t, n, r, callErr); err != nil {
		return err
	}
	s.postJobEnd(n, name, callErr)

	where := "on_complete of " + n.Job.ID + " (" + r.where + ")"
	if err := s.runEffects(t, inv.OnComplete, where); err != nil {
		return err
	}
	redirect := ""
	if callErr != nil && n.Job.Status == jobs.Failed && inv.OnError != "" {
		to, err := s.onErrorTarget(inv)
		if err != nil {
			return err
		}
		redirect = to
		t.handled = append(t.handled, HandledError{Namespace: name, Call: inv.ID, Err: callErr, OnError: inv.OnError, Background: true})
	}
	targets := t.targets
	t.targets = nil
	handled := len(t.handled)
	t.after = func() error { return s.afterJobChain(t, n, where, redirect, targets, handled) }
	return nil
}

// jobError is the error a job ended with: the call's, else the
// infrastructure's. A cancelled job's context error reads as the
// cancellation it was.
func jobError(n jobs.Notice) error {
	callErr := n.Result.Err
	if callErr == nil {
		callErr = n.Result.Infra
	}
	if errors.Is(callErr, context.Canceled) && n.Job.Status == jobs.Cancelled {
		callErr = fmt.Errorf("background job %s was cancelled", n.Job.ID)
	}
	return callErr
}

// traceJobEnd writes the job's harness return and its job.completed event.
func (s *Session) traceJobEnd(t *turnCtx, n jobs.Notice, name string, callErr error) error {
	returned := trace.HarnessReturned{Namespace: name, Data: n.Result.Data}
	if callErr != nil {
		returned.Error = callErr.Error()
	}
	if err := s.emit(t, returned); err != nil {
		return err
	}
	done := trace.JobCompleted{Handler: n.Job.Handler, JobID: n.Job.ID, State: n.Job.Origin, Status: string(n.Job.Status)}
	if callErr != nil {
		done.Error = callErr.Error()
	}
	if err := s.emit(t, done); err != nil {
		return err
	}
	s.openJobs = s.openJobs.Apply(done)
	return nil
}

// applyJobResult writes what a job's end puts in the world, each key with
// its world update: the last job's id, status and result, the invoke's
// binds that read the result (a failed job binds nothing), and for a
// failure last_error and host_error. A failure without on_error is also a
// turn error.
func (s *Session) applyJobResult(t *turnCtx, n jobs.Notice, r *running, callErr error) error {
	inv, name, res := r.inv, r.name, n.Result
	result := map[string]any{}
	for k, v := range res.Data {
		result[k] = v
	}
	for _, kv := range []struct {
		k string
		v any
	}{{WorldLastJobID, n.Job.ID}, {WorldLastJobStatus, string(n.Job.Status)}, {WorldLastJobResult, result}} {
		s.setWorld(kv.k, kv.v)
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{kv.k: kv.v}}); err != nil {
			return err
		}
	}
	if res.Data != nil && callErr == nil { // the binds that read the result (job_id was bound at the start)
		rest := &story.Invoke{Name: name}
		for _, b := range inv.Bind {
			if b.Template != nil || b.Path != "job_id" {
				rest.Bind = append(rest.Bind, b)
			}
		}
		if err := s.bind(t, rest, res.Data); err != nil {
			return err
		}
	}
	if callErr == nil {
		return nil
	}
	if inv.OnError == "" {
		t.errs = append(t.errs, fmt.Errorf("%s (background job %s): %w", name, n.Job.ID, callErr))
	}
	he := map[string]any{"namespace": name, "message": callErr.Error(), "job_id": n.Job.ID}
	s.setWorld("last_error", callErr.Error())
	s.setWorld("host_error", he)
	if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{"last_error": callErr.Error()}}); err != nil {
		return err
	}
	return s.emit(t, trace.WorldUpdate{Set: map[string]any{"host_error": he}})
}

// postJobEnd posts the job's end to the inbox, its severity by status; a
// failure's title carries the error.
func (s *Session) postJobEnd(n jobs.Notice, name string, callErr error) {
	sev, verb := inbox.Success, "done"
	switch n.Job.Status {
	case jobs.Failed:
		sev, verb = inbox.Error, "failed"
	case jobs.Cancelled:
		sev, verb = inbox.Warn, "cancelled"
	}
	title := fmt.Sprintf("Job %s: %s", verb, name)
	if callErr != nil && n.Job.Status == jobs.Failed {
		title += ": " + callErr.Error()
	}
	s.post(inbox.Notification{Severity: sev, Kind: "job", Title: title, State: n.Job.Origin, JobID: n.Job.ID})
}

// afterJobChain runs once the on_complete chain's calls are dispatched and
// moves the session, at most once: not at all when an on_error inside the
// chain already moved it; to the invoke's on_error target (redirect) for a
// failed job; else to the first target: of the chain whose when: holds.
// handled is how many handled errors the turn had before the chain ran.
func (s *Session) afterJobChain(t *turnCtx, n jobs.Notice, where, redirect string, targets []*story.Effect, handled int) error {
	for _, h := range t.handled[handled:] {
		if h.Redirect == RedirectEntered {
			return nil // an on_error inside the chain moved the session; target: defers to it
		}
	}
	if redirect != "" {
		h := &t.handled[handled-1]
		if redirect == s.state {
			h.Redirect = RedirectIgnored
			return nil
		}
		h.Redirect = RedirectEntered
		if err := s.emit(t, trace.MachineTransition{From: s.state, To: redirect, Intent: JobIntent}); err != nil {
			return err
		}
		return s.jobMove(t, redirect)
	}
	for i, e := range targets {
		if e.When != nil {
			ok, err := e.When.Eval(s.env(t))
			if err != nil {
				return fault("guard error in %s, target effect %d (%s): when %q: %w", where, i, e.WhenPos, e.When.Source(), err)
			}
			if !ok {
				continue
			}
		}
		return s.takeJobTarget(t, e, n.Job.Origin, where, i)
	}
	return nil
}

// takeJobTarget takes one target: effect of an on_complete chain: its own
// effects first, then the transition (rendered from the job's origin state
// when templated); a stay target emits the transition and stays.
func (s *Session) takeJobTarget(t *turnCtx, e *story.Effect, origin, where string, i int) error {
	if len(e.Effects) > 0 { // the target's own effects land first
		if err := s.runEffects(t, e.Effects, fmt.Sprintf("%s, target effect %d's effects", where, i)); err != nil {
			return err
		}
	}
	to, stay := e.Target, e.TargetStay
	if e.TargetTemplate != nil {
		var err error
		if to, stay, err = s.jobTarget(t, e, origin, where, i); err != nil {
			return err
		}
	}
	if err := s.emit(t, trace.MachineTransition{From: s.state, To: to, Intent: JobIntent}); err != nil {
		return err
	}
	if stay {
		return nil
	}
	return s.jobMove(t, to)
}

// jobMove is the move a finished job's on_error or target: takes. Unlike
// transition it keeps the armed timeouts of the states it leaves (a job's
// redirect does not cancel them: Kitsoki's drive-timeout flows rely on
// it). Inside a parallel state it delivers the events the move queued.
func (s *Session) jobMove(t *turnCtx, to string) error {
	if err := s.move(t, to); err != nil {
		return err
	}
	if s.inParallel() && !t.delivering && len(t.events) > 0 {
		return s.broadcast(t)
	}
	return nil
}

// jobTarget renders an on_complete target template and resolves the name
// from the state the job started in (origin), as an arm's rendered target
// is resolved: inside an import the name is the imported story's own.
// "." stays where the session is.
func (s *Session) jobTarget(t *turnCtx, e *story.Effect, origin, where string, i int) (string, bool, error) {
	src := e.TargetTemplate.Source()
	v, err := e.TargetTemplate.Eval(s.env(t))
	if err != nil {
		return "", false, fault("%s, target effect %d (%s): target %q: %w", where, i, e.TargetPos, src, err)
	}
	text := ""
	if v != nil {
		text = fmt.Sprint(v)
	}
	to, stay, err := s.story.ResolveTarget(origin, text)
	if err != nil {
		return "", false, fault("%s, target effect %d (%s): target %q rendered %q, %w", where, i, e.TargetPos, src, text, err)
	}
	if stay {
		return s.state, true, nil
	}
	return to, false, nil
}

// jobSeqBase spaces the seqs jobSink reports per job, so two jobs started
// in the same turn and state never derive the same agent call_id.
const jobSeqBase = 1_000_000

// jobSink buffers the trace events a background job's call writes, so the
// session can write them out, in order, in the job's completion turn. The
// seq it reports (agent call ids derive from it) is the job's number times
// jobSeqBase plus the job's own event count.
type jobSink struct {
	mu     sync.Mutex
	now    func() time.Time
	base   int
	events []bufferedEvent
	// side is the session's sink, which keeps the job's agent-action
	// transcripts at once: they are files beside the trace, not lines.
	side any
}

// WriteTranscript keeps a job's agent call's transcript in the session's
// sink (when it keeps transcripts).
func (b *jobSink) WriteTranscript(callID string, t *trace.Transcript) (*trace.TranscriptRef, error) {
	return trace.WriteTranscript(b.side, callID, t)
}

type bufferedEvent struct {
	ev plugin.Event
	p  trace.Payload // nil for an open (plugin) event
}

var _ host.Sink = (*jobSink)(nil)

func (b *jobSink) Append(ev *plugin.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, bufferedEvent{ev: *ev})
	return nil
}

func (b *jobSink) AppendPayload(ev *plugin.Event, p trace.Payload) error {
	if p == nil {
		return errors.New("trace: AppendPayload given a nil payload")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, bufferedEvent{ev: *ev, p: p})
	return nil
}

func (b *jobSink) NextSeq(int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.base + len(b.events)
}

func (b *jobSink) Now() time.Time { return b.now() }

// flush writes the buffered events to sink as events of turn.
func (b *jobSink) flush(sink host.Sink, turn int64) error {
	b.mu.Lock()
	evs := b.events
	b.events = nil
	b.mu.Unlock()
	for _, e := range evs {
		ev := e.ev
		ev.Turn, ev.Seq, ev.TS = turn, 0, ""
		var err error
		if e.p != nil {
			err = sink.AppendPayload(&ev, e.p)
		} else {
			err = sink.Append(&ev)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
