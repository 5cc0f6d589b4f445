package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// Sessions is the session API over one sessions directory: create a
// session (by key or id), continue it with one input, inspect it, read
// its trace, list, fork, delete and prune. Every front end that drives a
// durable session by its name goes through it: `kitsoki session …`, the
// MCP session tools, the Go API's Create and Resume. A session is held
// by one process at a time (its writer lock); a second gets a
// *session.BusyError (ExitBusy).
type Sessions struct {
	Store session.Store
	// Load loads the story whose root file is path. Required.
	Load func(path string) (*story.Story, error)
	// Config is the runtime configuration of a session of st (its
	// agents, cassette, logger, pins); done, when set, runs after the
	// session closed (a cassette's write, a recorder's). Required.
	Config func(st *story.Story) (cfg runtime.Config, done func() error, err error)
	// Stderr receives what a resume tells (a story that changed, a fork,
	// a journal line cut); nil discards it.
	Stderr io.Writer
}

// CreateRequest asks for a new session.
type CreateRequest struct {
	// Story is the story's root file.
	Story string
	// Key names the session from outside (transport:thread); ID names it
	// ("" generates one).
	Key, ID string
	World   map[string]any
	Root    string
	Routing orchestrator.RoutingConfig
	// OnDispatch, when set, is told of each call the session dispatches
	// while this process holds it; the function it returns is called when
	// the call returned (a front end that shows the calls in flight).
	OnDispatch func(c *host.Call) (done func())
}

// ResumeRequest names a session to go on with.
type ResumeRequest struct {
	// Ref is its key (transport:thread) or id.
	Ref string
	// Fork forks a session whose story changed and decides differently
	// from the last turn that matched, instead of refusing.
	Fork bool
	// SideEffects is what to do with an external_side_effect call in
	// flight at a crash (retry, skip; "" stops).
	SideEffects string
	// OnDispatch is CreateRequest.OnDispatch.
	OnDispatch func(c *host.Call) (done func())
}

// Open is a session this process holds (its writer lock) until Close.
type Open struct {
	*Local
	meta session.Meta
	done func() error
	last *orchestrator.Outcome // the turn the last frame reported (Settled reports it again)
}

// Create starts a new session: turn 0 runs, and the frame reports it.
func (s *Sessions) Create(ctx context.Context, r CreateRequest) (*Open, *Frame, error) {
	if r.Key != "" {
		if err := session.CheckKey(r.Key); err != nil {
			return nil, nil, Exit(ExitUsage, err)
		}
	}
	st, err := s.Load(r.Story)
	if err != nil {
		return nil, nil, Exit(ExitLoad, err)
	}
	if err := orchestrator.CheckWorld(st, r.World); err != nil {
		st.Close()
		return nil, nil, Exit(ExitUsage, err)
	}
	plan, err := NewPlan(ctx, PlanRequest{Store: s.Store, Story: st, ID: r.ID, Key: r.Key, World: r.World, Root: r.Root,
		Stderr: s.stderr(), Mode: PlanNew, Quiet: true})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	o, err := s.open(st, plan, r.OnDispatch, func(rs *runtime.Session) { rs.World, rs.Root, rs.Routing = r.World, r.Root, r.Routing })
	if err != nil {
		if r.Key != "" {
			_ = s.Store.UnbindKey(r.Key, plan.ID())
		}
		return nil, nil, err
	}
	out, err := o.Begin(ctx)
	if err != nil {
		o.Close()
		return nil, nil, err
	}
	f, err := o.frame(ctx, out, "started")
	return o, f, err
}

// Resume picks up a session where its journal stopped (an unfinished turn
// is taken again): the frame reports where it stands, or the redone turn.
func (s *Sessions) Resume(ctx context.Context, r ResumeRequest) (*Open, *Frame, error) {
	m, err := s.Store.Find(r.Ref)
	if err != nil {
		return nil, nil, Exit(ExitFailure, err)
	}
	st, err := s.Load(m.Story)
	if err != nil {
		return nil, nil, Exit(ExitLoad, fmt.Errorf("session %s runs %s, which does not load now: %w", m.ID, m.Story, err))
	}
	plan, err := NewPlan(ctx, PlanRequest{Store: s.Store, Story: st, ID: m.ID, Fork: r.Fork, SideEffects: r.SideEffects,
		Stderr: s.stderr(), Mode: PlanExisting, Quiet: true})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	o, err := s.open(st, plan, r.OnDispatch, nil)
	if err != nil {
		return nil, nil, err
	}
	out, err := o.Begin(ctx)
	if err != nil {
		o.Close()
		return nil, nil, err
	}
	outcome := "resumed"
	if j := plan.Resume().Journal; j.Partial != nil || !j.Started {
		outcome = out.Outcome // a turn was taken again
	} else {
		out = nil
	}
	f, err := o.frame(ctx, out, outcome)
	return o, f, err
}

// open opens the runtime of a planned session; onDispatch is told of its
// calls, shape adjusts its runtime.Session.
func (s *Sessions) open(st *story.Story, plan *Plan, onDispatch func(*host.Call) func(), shape func(*runtime.Session)) (*Open, error) {
	cfg, done, err := s.Config(st)
	if err != nil {
		plan.Release()
		st.Close()
		return nil, Exit(ExitFailure, err)
	}
	if cfg.Session == nil {
		cfg.Session = &runtime.Session{}
	}
	if onDispatch != nil {
		cfg.OnDispatch = onDispatch
	}
	if cfg.SessionsDir == "" {
		cfg.SessionsDir = s.Store.Dir // the run's chats beside its sessions, as kitsoki run keeps them
	}
	if shape != nil {
		shape(cfg.Session)
	}
	l, err := OpenLocal(st, cfg, plan)
	if err != nil {
		st.Close()
		if done != nil {
			err = errors.Join(err, done())
		}
		return nil, Exit(CodeOf(err), err)
	}
	return &Open{Local: l, meta: plan.Meta(), done: func() error {
		var errs []error
		if done != nil {
			errs = append(errs, done())
		}
		return errors.Join(append(errs, st.Close())...)
	}}, nil
}

// Continue takes one input and reports the turn.
func (o *Open) Continue(ctx context.Context, in Input) (*Frame, error) {
	out, err := o.Take(ctx, in)
	if ie, ok := errors.AsType[*InputError](err); ok {
		return nil, Exit(ExitRejected, ie)
	}
	if err != nil {
		return nil, Exit(ExitFailure, err)
	}
	return o.frame(ctx, out, out.Outcome)
}

// Frame reports where the session stands, no turn taken.
func (o *Open) Frame(ctx context.Context) (*Frame, error) {
	o.mark = o.traceLen()
	return o.frame(ctx, nil, "status")
}

func (o *Open) frame(ctx context.Context, out *orchestrator.Outcome, outcome string) (*Frame, error) {
	st, err := o.Status(ctx)
	if err != nil {
		return nil, err
	}
	events, err := o.TurnEvents()
	if err != nil {
		return nil, err
	}
	f := NewFrame(o.Meta(), st, out, outcome, events)
	f.Mask(secret.New(o.Story().Secrets))
	o.last = out
	return f, nil
}

// Settled is what a call whose process exits once it answers does before
// it answers (kitsoki session create and continue). The background jobs
// its turn started run in this process, and one still running when the
// process exits is lost: it never ends and a resume does not restart it.
// So Settled waits until every job has ended or waits for an answer, each
// job's delivery taken as its own turn, as a scripted kitsoki run does at
// the end of its input. It returns f as the session then stands: f's
// outcome, the turn, state, view, world and jobs after the jobs, the job
// turns' says and call failures after the call's own, and the job turns
// among its events. When
// no job ran it returns f.
func (o *Open) Settled(ctx context.Context, f *Frame) (*Frame, error) {
	// A job may have ended before f was made (it is not in f.Jobs then)
	// and still wait to be delivered, so Settle runs whatever f says.
	outs, err := o.Local.Settle(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, Exit(ExitFailure, fmt.Errorf("interrupted while waiting for the session's background jobs: they stop with this process, and session inspect names them lost (%w)", context.Cause(ctx)))
		}
		return nil, Exit(ExitFailure, fmt.Errorf("waiting for the session's background jobs: %w", err))
	}
	if len(outs) == 0 && len(f.Jobs) == 0 {
		return f, nil // no job ran
	}
	nf, err := o.frame(ctx, o.last, f.Outcome)
	if err != nil {
		return nil, err
	}
	for _, out := range outs { // the job turns' says and call failures follow the call's
		nf.Says = append(nf.Says, out.Says...)
		nf.fillCalls(out)
	}
	nf.Mask(secret.New(o.Story().Secrets))
	return nf, nil
}

// Meta is the session's index entry.
func (o *Open) Meta() session.Meta {
	if o.plan != nil {
		return o.plan.Meta()
	}
	return o.meta
}

// Close saves the session, releases its writer lock and what its
// configuration opened.
func (o *Open) Close() error {
	return errors.Join(o.Local.Close(), o.done())
}

// Continue resumes the session r names, takes one input and closes it:
// one event in, one frame out (`kitsoki session continue`).
func (s *Sessions) Continue(ctx context.Context, r ResumeRequest, in Input) (_ *Frame, err error) {
	o, _, err := s.Resume(ctx, r)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, o.Close()) }()
	f, err := o.Continue(ctx, in)
	if err != nil {
		return nil, err
	}
	return o.Settled(ctx, f)
}

// Inspect reports where a session stands without taking its writer lock:
// the journal's last finished turn, read in the story as it is now (a
// session a process holds is inspected as its last finished turn left
// it). Its jobs are the background jobs the journal shows as not ended:
// with the status the journal last recorded while a process holds the
// session, else lost (journalJobs).
func (s *Sessions) Inspect(ctx context.Context, ref string) (*Frame, error) {
	m, status, secrets, err := s.look(ctx, ref)
	if err != nil {
		return nil, err
	}
	f := NewFrame(m, status, nil, "status", nil)
	f.Mask(secret.New(secrets))
	return f, nil
}

// Status is Inspect's answer before it is a frame: the session's index
// entry as its journal describes it, and where it stands (a front end
// that draws the session itself, the web page, reads it so).
func (s *Sessions) Status(ctx context.Context, ref string) (session.Meta, *Status, error) {
	m, st, _, err := s.look(ctx, ref)
	return m, st, err
}

// look reads where session ref stands from its journal; secrets are the
// story's, for the caller's mask.
func (s *Sessions) look(ctx context.Context, ref string) (session.Meta, *Status, []string, error) {
	m, err := s.Store.Find(ref)
	if err != nil {
		return m, nil, nil, Exit(ExitFailure, err)
	}
	st, err := s.Load(m.Story)
	if err != nil {
		return m, nil, nil, Exit(ExitLoad, fmt.Errorf("session %s runs %s, which does not load now: %w", m.ID, m.Story, err))
	}
	defer st.Close()
	if _, err := s.Store.Journal(m, ""); err != nil {
		return m, nil, nil, Exit(ExitFailure, err)
	}
	j, err := session.Load(m.Trace)
	if err != nil {
		return m, nil, nil, Exit(ExitFailure, err)
	}
	m = j.Describe(m)
	status := &Status{ID: m.ID, State: j.State, Turn: j.Turn, World: j.World, Done: j.Done, Exit: j.Exit}
	if j.Started {
		// The session is only looked at: no agent is asked, so its pins
		// need not resolve.
		rt, err := runtime.Open(st, runtime.Config{IgnorePins: true, Session: &runtime.Session{ID: m.ID}})
		if err != nil {
			return m, nil, nil, Exit(ExitFailure, err)
		}
		defer rt.Close()
		w := orchestrator.DeepCopy(j.World).(map[string]any)
		session.Retype(st, w)
		if err := rt.Session().Restore(j.State, w, j.Turn); err != nil {
			return m, nil, nil, Exit(ExitFailure, fmt.Errorf("session %s: %w", m.ID, err))
		}
		l := &Local{rt: rt, sess: rt.Session()}
		if status, err = l.Status(ctx); err != nil {
			return m, nil, nil, err
		}
	}
	status.Jobs = journalJobs(j, m.Trace)
	return m, status, st.Secrets, nil
}

// journalJobs are the background jobs the journal shows as not ended, as
// its last turn recorded them while a process still holds the journal
// (the session is live there), else lost: their process is gone.
func journalJobs(j *session.Journal, path string) []jobs.Info {
	if len(j.Jobs) == 0 {
		return nil
	}
	live := trace.WriterActive(path)
	out := make([]jobs.Info, 0, len(j.Jobs))
	for _, sj := range j.Jobs {
		in := jobs.Info{ID: sj.JobID, Handler: sj.Handler, Origin: sj.State, Status: jobs.Status(sj.Status)}
		if sj.Prompt != "" {
			in.Question = &jobs.Question{Prompt: sj.Prompt}
		}
		if !live {
			in.Status, in.Question = jobs.Lost, nil
		}
		out = append(out, in)
	}
	return out
}

// Trace is a session's journal (the JSONL trace, secrets masked as it was
// written).
func (s *Sessions) Trace(ref string) ([]byte, error) {
	m, err := s.Store.Find(ref)
	if err != nil {
		return nil, Exit(ExitFailure, err)
	}
	if _, err := s.Store.Journal(m, ""); err != nil {
		return nil, Exit(ExitFailure, err)
	}
	b, err := os.ReadFile(m.Trace)
	if err != nil {
		return nil, Exit(ExitFailure, fmt.Errorf("session %s: %w", m.ID, err))
	}
	return b, nil
}

// List lists the sessions, the most recent activity first.
func (s *Sessions) List() ([]session.Meta, error) { return s.Store.List() }

// Fork starts a new session from turn at of the one ref names.
func (s *Sessions) Fork(ref string, at int64) (session.Meta, error) {
	m, err := s.Store.Find(ref)
	if err != nil {
		return session.Meta{}, Exit(ExitFailure, err)
	}
	if _, err := s.Store.Journal(m, ""); err != nil {
		return session.Meta{}, Exit(ExitFailure, err)
	}
	fm, _, err := Fork(s.Store, m, at, nil)
	if err != nil {
		return session.Meta{}, Exit(ExitFailure, err)
	}
	return fm, nil
}

// Delete deletes the session ref names (refused while a process holds
// it). A journal outside the sessions directory is left where it is:
// kept names it.
func (s *Sessions) Delete(ref string) (m session.Meta, kept string, err error) {
	if m, err = s.Store.Find(ref); err != nil {
		return session.Meta{}, "", Exit(ExitFailure, err)
	}
	kept, err = s.Store.Delete(m.ID)
	return m, kept, err
}

// Prune deletes the sessions idle for longer than olderThan (those a
// process holds are left and named in skipped).
func (s *Sessions) Prune(olderThan time.Duration, now time.Time) (deleted []session.Meta, skipped []string, err error) {
	return s.Store.Prune(now.Add(-olderThan))
}

func (s *Sessions) stderr() io.Writer {
	if s.Stderr == nil {
		return io.Discard
	}
	return s.Stderr
}
