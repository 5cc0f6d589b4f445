package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/filelock"
	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// PlanRequest says which durable session a run is: a new one, or one the
// sessions directory holds, picked up where its journal stopped.
type PlanRequest struct {
	Store session.Store
	Story *story.Story
	// ID is --session: resume the session of that id when the directory
	// holds it, else name the new one ("" generates one).
	ID string
	// Key names a new session from outside (transport:thread).
	Key string
	// Trace is --trace: the new session's journal path ("" is the
	// store's default).
	Trace string
	// Latest is --continue: resume the story's latest unfinished session.
	Latest bool
	// Fork is --fork: resuming into a changed story that decides
	// differently forks from the last turn that matched.
	Fork bool
	// SideEffects is --resume-side-effects.
	SideEffects string
	// ResumeInputs is --resume-inputs: what scripted inputs given to a
	// resumed session are: "new" (turns after the journal's last) or
	// "replay" (the whole run from turn 1, the journal's checked and
	// skipped); "" picks replay for Latest and new for ID.
	ResumeInputs string
	// World and Root are how a new session starts (--world, --root); a
	// resume refuses different ones.
	World map[string]any
	Root  string
	// Mode is PlanRun (a run's rules: resume what exists, else start),
	// PlanNew (the session must not exist) or PlanExisting (it must).
	Mode PlanMode
	// Quiet leaves out the routine lines (the new session's id and trace,
	// "resuming session …"); warnings, forks and repairs are still told.
	Quiet bool
	// Stderr receives what the plan tells the person running it.
	Stderr io.Writer
}

// PlanMode says whether a plan may start a session, resume one, or both.
type PlanMode int

const (
	// PlanRun resumes the session when the directory holds it, else
	// starts it (kitsoki run).
	PlanRun PlanMode = iota
	// PlanNew starts the session; one the directory holds is refused.
	PlanNew
	// PlanExisting resumes the session; one the directory lacks is
	// refused.
	PlanExisting
)

// Plan is what a run does with its durable session: start a new one or
// pick one up. It holds the session's writer lock from Plan to Close.
type Plan struct {
	store  session.Store
	meta   session.Meta
	resume *runtime.Resume
	// replay says the scripted inputs replay the run from turn 1 (else
	// they are new turns); skip is how many of them the journal already
	// holds (0 when they are new), skipped counts those skipped so far,
	// and after is the journal's last turn.
	replay        bool
	skip, skipped int
	after         int
	// explained says the rule was told (at the first scripted input);
	// announced says the first input taken was named.
	explained, announced bool
	// inputs are the journal's turn inputs, to compare the skipped ones.
	inputs map[int64]session.Input
	lock   *filelock.Lock
	stderr io.Writer
	quiet  bool
}

// ErrFinished is the error of a resume of a session that reached a
// terminal state: it is looked at (Sessions.Status) or forked, not
// continued.
var ErrFinished = errors.New("finished")

// NewPlan decides the session of a run: Latest, and ID of a session the
// directory holds, resume it; anything else starts a new one. It takes
// the session's writer lock first, so that no other process takes a turn
// between reading the journal and writing it (a *session.BusyError, exit
// ExitBusy, when one holds it).
func NewPlan(ctx context.Context, r PlanRequest) (_ *Plan, err error) {
	st, store := r.Story, r.Store
	p := &Plan{store: store, stderr: r.Stderr, quiet: r.Quiet}
	if p.stderr == nil {
		p.stderr = io.Discard
	}
	defer func() {
		if err != nil {
			p.Release()
		}
	}()
	if _, err := session.ParseSideEffects(r.SideEffects); err != nil {
		return nil, Exit(ExitFailure, err)
	}
	if r.Latest && r.ID != "" {
		return nil, Exit(ExitUsage, errors.New("--continue picks the latest unfinished session; give it or --session ID, not both"))
	}
	switch r.ResumeInputs {
	case "", "new", "replay":
	default:
		return nil, Exit(ExitUsage, fmt.Errorf("--resume-inputs %q: want new (the inputs are turns after the journal's last) or replay (they are the run from turn 1, the journal's skipped)", r.ResumeInputs))
	}
	m, found, err := p.find(r)
	if err != nil {
		return nil, err
	}
	if found && !r.Latest && r.Trace != "" && absPath(r.Trace) != m.Trace {
		// --session ID --trace NEW: a new run under that id, as before
		// sessions were durable; the index entry then points at NEW.
		found = false
	}
	switch {
	case found && r.Mode == PlanNew:
		return nil, Exit(ExitFailure, fmt.Errorf("session %s exists in %s; continue it (kitsoki session continue %s …), or give another id", m.ID, store.Dir, m.ID))
	case !found && r.Mode == PlanExisting:
		return nil, Exit(ExitFailure, fmt.Errorf("session %s: %w in %s", r.ID, session.ErrNotFound, store.Dir))
	case !found:
		return p, p.newSession(r)
	}
	if r.Trace != "" && absPath(r.Trace) != m.Trace {
		return nil, Exit(ExitUsage, fmt.Errorf("session %s keeps its journal at %s; drop --trace to resume it", m.ID, m.Trace))
	}
	named := ""
	if r.Trace != "" {
		named = absPath(r.Trace)
	}
	if _, err := store.Journal(m, named); err != nil {
		return nil, Exit(ExitFailure, err)
	}
	if m.Story != st.File {
		return nil, Exit(ExitFailure, fmt.Errorf("session %s runs %s, not %s: resume it with that story (or fork it)", m.ID, m.Story, st.File))
	}
	if m.Finished {
		return nil, Exit(ExitFailure, fmt.Errorf("session %s %w in state %q at turn %d; fork it to go on: kitsoki session fork %s --at-turn N", m.ID, ErrFinished, m.State, m.Turn, m.ID))
	}
	if err := checkSeed(m, r); err != nil {
		return nil, Exit(ExitUsage, err)
	}
	return p, p.pickUp(ctx, r, m)
}

// find looks the session up and takes its lock: the latest unfinished one
// of the story, or the one of r.ID (found is false when there is none).
func (p *Plan) find(r PlanRequest) (m session.Meta, found bool, err error) {
	store := p.store
	switch {
	case r.Latest:
		if m, found, err = store.Latest(r.Story.File); err != nil {
			return m, false, Exit(ExitFailure, err)
		}
		if !found {
			fmt.Fprintf(p.stderr, "kitsoki: no unfinished session of %s in %s; starting a new one\n", r.Story.File, store.Dir)
			return m, false, nil
		}
	case r.ID != "":
		if err := session.CheckID(r.ID); err != nil {
			return m, false, Exit(ExitUsage, err)
		}
	default:
		return m, false, nil
	}
	id := r.ID
	if r.Latest {
		id = m.ID
	}
	if p.lock, err = store.Lock(id); err != nil {
		return m, false, err
	}
	// Read the entry under the lock: the process that held it may have
	// finished a turn since.
	got, err := store.Get(id)
	switch {
	case err == nil:
		return got, true, nil
	case !errors.Is(err, session.ErrNotFound):
		return m, false, Exit(ExitFailure, err)
	}
	return m, false, nil
}

// pickUp reads m's journal to resume it; a changed story is checked
// (and with Fork forked) first.
func (p *Plan) pickUp(ctx context.Context, r PlanRequest, m session.Meta) error {
	st := r.Story
	j, err := loadJournal(m, p.stderr)
	if err != nil {
		return Exit(ExitFailure, err)
	}
	if j.StoryHash != "" && j.StoryHash != st.ContentHash {
		forked, err := p.checkChanged(ctx, r, m)
		if err != nil {
			return err
		}
		if forked != nil {
			m, j = forked.meta, forked.j
		}
	}
	policy, _ := session.ParseSideEffects(r.SideEffects)
	if err := j.Partial.CheckSideEffects(st, policy); err != nil {
		return Exit(ExitFailure, err)
	}
	p.meta = m
	p.resume = &runtime.Resume{Journal: j, SideEffects: policy}
	p.inputs = j.Inputs
	p.after = int(j.Turn)
	if j.Partial != nil {
		p.after = int(j.Partial.Turn)
	}
	if !j.Started {
		p.after = 0
	}
	p.replay = r.ResumeInputs == "replay" || (r.ResumeInputs == "" && r.Latest)
	if p.replay {
		p.skip = p.after
	}
	return nil
}

func (p *Plan) newSession(r PlanRequest) error {
	st := r.Story
	id, tr := r.ID, r.Trace
	if id == "" {
		id = NewID()
	}
	if p.lock == nil {
		l, err := p.store.Lock(id)
		if err != nil {
			return err
		}
		p.lock = l
	}
	if tr == "" {
		tr = p.store.TracePath(id)
	}
	tr = absPath(tr)
	now := time.Now().UTC()
	p.meta = session.Meta{ID: id, AppID: st.App.ID, Story: st.File, StoryHash: st.ContentHash,
		Version: version.String(), Trace: tr, Created: now, Updated: now, State: "", Turn: 0, Key: r.Key}
	if r.Key != "" {
		if err := p.store.BindKey(r.Key, id); err != nil {
			return Exit(ExitFailure, err)
		}
	}
	return nil
}

type forkedSession struct {
	meta session.Meta
	j    *session.Journal
}

// checkChanged runs the nondeterminism check of a resume into a changed
// story: the first turn that decides differently stops the resume, or with
// Fork starts a new session from the last turn that matched.
func (p *Plan) checkChanged(ctx context.Context, r PlanRequest, m session.Meta) (*forkedSession, error) {
	st, stderr := r.Story, p.stderr
	_, evs, err := session.ReadAll(m.Trace, -1)
	if err != nil {
		return nil, Exit(ExitFailure, err)
	}
	div, matched, err := runtime.CheckJournal(ctx, st, m.ID, evs)
	if err != nil && div == nil {
		return nil, Exit(ExitFailure, fmt.Errorf("session %s: the story changed since the session started, and replaying its journal failed: %w", m.ID, err))
	}
	if div == nil {
		fmt.Fprintf(stderr, "kitsoki: the story changed since session %s started; its %d finished turn(s) replay with the same decisions\n", m.ID, matched)
		return nil, nil
	}
	if !r.Fork {
		msg := div.Error()
		if err != nil {
			msg = err.Error()
		}
		return nil, Exit(ExitFailure, fmt.Errorf("session %s: the story changed and decides differently: %s; pass --fork to start a new session from turn %d, the last that matched", m.ID, msg, matched))
	}
	if matched < 0 {
		return nil, Exit(ExitFailure, fmt.Errorf("session %s: %s; no turn matched, so there is nothing to fork", m.ID, div.Error()))
	}
	fm, j, err := Fork(p.store, m, matched, st)
	if err != nil {
		return nil, Exit(ExitFailure, err)
	}
	// The fork is the session this run holds from now on.
	l, err := p.store.Lock(fm.ID)
	if err != nil {
		return nil, err
	}
	p.lock.Release()
	p.lock = l
	fmt.Fprintf(stderr, "kitsoki: %s\nkitsoki: forked session %s from turn %d of %s\n", div.Error(), fm.ID, matched, m.ID)
	return &forkedSession{meta: fm, j: j}, nil
}

// Fork writes a new session from turn at of m; st, when set, is the
// story it will run (its hash goes in the header), else m's. The new
// session has no key: the key stays with m.
func Fork(store session.Store, m session.Meta, at int64, st *story.Story) (session.Meta, *session.Journal, error) {
	id := NewID()
	hash := m.StoryHash
	if st != nil {
		hash = st.ContentHash
	}
	dst := store.TracePath(id)
	hdr := trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: hash, KitsokiVersion: version.String(),
		SessionID: id, ForkedFrom: m.ID, ForkedAtTurn: at}
	j, err := session.Fork(m.Trace, at, dst, hdr)
	if err != nil {
		return session.Meta{}, nil, fmt.Errorf("session %s: %w", m.ID, err)
	}
	now := time.Now().UTC()
	fm := j.Describe(session.Meta{ID: id, AppID: m.AppID, Story: m.Story, StoryHash: hash, Version: version.String(),
		Trace: dst, Created: now, Updated: now, ForkedFrom: m.ID, ForkedAt: at})
	fm.Updated = now
	if err := store.Put(fm); err != nil {
		return session.Meta{}, nil, err
	}
	return fm, j, nil
}

// ID is the session's id.
func (p *Plan) ID() string { return p.meta.ID }

// Store is the sessions directory the session is kept in.
func (p *Plan) Store() session.Store { return p.store }

// Trace is the session's journal.
func (p *Plan) Trace() string { return p.meta.Trace }

// Meta is the session's index entry as the plan has it.
func (p *Plan) Meta() session.Meta { return p.meta }

// Resume is what runtime.Open restores the session from; nil for a new
// session.
func (p *Plan) Resume() *runtime.Resume { return p.resume }

// Header is the session.header of a new session's journal.
func (p *Plan) Header() trace.HeaderInfo {
	m := p.meta
	return trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: m.StoryHash, KitsokiVersion: m.Version,
		SessionID: m.ID, ForkedFrom: m.ForkedFrom, ForkedAtTurn: m.ForkedAt}
}

// Release gives the session's writer lock up (Close does it for a
// session that was opened).
func (p *Plan) Release() {
	if p != nil && p.lock != nil {
		p.lock.Release()
		p.lock = nil
	}
}

// save writes the session's index entry from the live session.
// size is the journal's length.
func (p *Plan) save(sess *orchestrator.Session, size int64) {
	m := p.meta
	m.State, m.Turn = sess.State(), sess.TurnNumber()
	m.Finished, m.Exit = sess.Done()
	w := sess.World()
	switch c := w["session_cost_usd"].(type) {
	case float64:
		m.CostUSD = c
	case int64:
		m.CostUSD = float64(c)
	}
	m.LastError, _ = w["last_error"].(string)
	m.Updated = time.Now().UTC()
	m.TraceBytes = size
	if err := p.store.Put(m); err != nil {
		fmt.Fprintln(p.stderr, "kitsoki: warning:", err)
	}
	p.meta = m
}

// start runs turn 0 of a new session, or brings a resumed one to where
// its journal stopped (redoing the unfinished turn), before any input is
// read, so every front end just continues. The outcome is what to report.
func (p *Plan) start(ctx context.Context, sess *orchestrator.Session, sink orchestrator.Sink, size int64) (*orchestrator.Outcome, error) {
	stderr := p.stderr
	if p.quiet {
		stderr = io.Discard
	}
	if p.resume == nil {
		fmt.Fprintf(stderr, "kitsoki: session %s, trace %s\n", p.meta.ID, p.meta.Trace)
		p.save(sess, size)
		return sess.Start(ctx)
	}
	j := p.resume.Journal
	switch {
	case j.Partial != nil:
		fmt.Fprintf(stderr, "kitsoki: resuming session %s: turn %d did not finish; taking it again (trace %s)\n", p.meta.ID, j.Partial.Turn, p.meta.Trace)
	default:
		fmt.Fprintf(stderr, "kitsoki: resuming session %s after turn %d in state %q (trace %s)\n", p.meta.ID, j.Turn, j.State, p.meta.Trace)
	}
	out, err := session.Resume(ctx, sess, sink, j)
	if err != nil || out != nil {
		return out, err
	}
	view, err := sess.View()
	if err != nil {
		return nil, err
	}
	done, exit := sess.Done()
	return &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: sess.State(), State: sess.State(), View: view, Done: done, Exit: exit}, nil
}

// skipInput skips a scripted line the resumed journal already took (when
// the inputs replay the run); a line that differs from the journal's
// stops the run (exit 2). It tells stderr which inputs it skips and takes.
func (p *Plan) skipInput(line string) (bool, error) {
	if p == nil || p.after == 0 {
		return false, nil // no turn taken yet: both rules take every input
	}
	if !p.explained {
		p.explained = true
		p.explain()
	}
	if p.skipped >= p.skip {
		if !p.announced {
			p.announced = true
			fmt.Fprintf(p.stderr, "kitsoki: resuming session %s: taking input %d %q as turn %d\n", p.meta.ID, p.skipped+1, line, p.after+1)
		}
		return false, nil
	}
	p.skipped++
	if in, ok := p.inputs[int64(p.skipped)]; ok && in.Text != line {
		return true, Exit(ExitUsage, fmt.Errorf("resuming session %s: input %d is %q, but the session's turn %d took %q; give the same inputs as the run that started it (the journal's are skipped), run them as new turns with --resume-inputs=new, or start a new session",
			p.meta.ID, p.skipped, line, p.skipped, in.Text))
	}
	fmt.Fprintf(p.stderr, "kitsoki: resuming session %s: skipping input %d %q: the journal's turn %d took it\n", p.meta.ID, p.skipped, line, p.skipped)
	return true, nil
}

// explain says what the scripted inputs of a resume are: the run replayed
// from turn 1 (the journal's skipped) or new turns after the journal's.
func (p *Plan) explain() {
	if !p.replay {
		fmt.Fprintf(p.stderr, "kitsoki: resuming session %s: the inputs given are new turns after the journal's turn %d (--resume-inputs=replay would take them as the run from turn 1)\n", p.meta.ID, p.after)
		return
	}
	fmt.Fprintf(p.stderr, "kitsoki: resuming session %s: the inputs given replay the run from turn 1: inputs 1 to %d are the journal's turns and are skipped, each checked against it (--resume-inputs=new would run them as new turns)\n", p.meta.ID, p.skip)
}

// loadJournal reads a session's journal to resume it; a last line a crash
// left half-written is cut off first (it is an event that never was).
func loadJournal(m session.Meta, stderr io.Writer) (*session.Journal, error) {
	j, err := session.Load(m.Trace)
	var fe *trace.FormatError
	if err == nil || !errors.As(err, &fe) || !strings.Contains(fe.Msg, "missing trailing newline") {
		return j, err
	}
	cut, rerr := trace.RepairTail(m.Trace)
	if rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if cut > 0 {
		fmt.Fprintf(stderr, "kitsoki: session %s: cut the last %d byte(s) of its journal, a line the crash left unfinished\n", m.ID, cut)
	}
	return session.Load(m.Trace)
}

// checkSeed compares the World and Root of a resumed run with how the
// session started (its turn 0): the same command may be given again, a
// different start may not.
func checkSeed(m session.Meta, r PlanRequest) error {
	if len(r.World) == 0 && r.Root == "" {
		return nil
	}
	t0, err := session.ReadTurn0(m.Trace)
	if err != nil {
		return err
	}
	root, world := session.Seed(t0)
	if r.Root != "" && r.Root != root {
		return fmt.Errorf("--root %s: session %s started in %q; --world and --root set how a new session starts, so give the same ones or none to resume it", r.Root, m.ID, root)
	}
	for k, v := range r.World {
		if fmt.Sprint(session.Normalize(v)) != fmt.Sprint(world[k]) {
			return fmt.Errorf("--world %s=%v: session %s started with %s=%v; --world and --root set how a new session starts, so give the same ones or none to resume it", k, v, m.ID, k, world[k])
		}
	}
	return nil
}

// NewID is a fresh session id: the UTC time and 8 random hex digits.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// isBusy reports whether err says another process holds the session: its
// writer lock, or its journal's.
func isBusy(err error) bool {
	return errors.Is(err, session.ErrBusy) || errors.Is(err, trace.ErrLocked)
}
