// Package jobs runs a session's background jobs: the invokes a story marks
// background: true. Each job runs its function on its own goroutine while
// the session takes further turns; the session collects what happened to
// its jobs (a question asked, a job ended) as notices at the points it
// chooses, so everything a job does to the world is applied between turns,
// on the session's goroutine.
//
// Time inside a job goes through the scheduler's clock (Sleep): on a fake
// clock a job parks until the clock is advanced past its wake time, and
// Settle tells a test when every job is parked or finished, so the order
// in which jobs end is decided by the clock, never by the machine's load.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// Status is where a job is in its life.
type Status string

// The statuses. Done, Failed and Cancelled are terminal.
const (
	Running       Status = "running"
	AwaitingInput Status = "awaiting_input"
	Done          Status = "done"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
	// Lost is never a scheduler's: a reader of a session's journal says it
	// of a job the journal shows as not ended once the process that ran
	// it is gone (no process holds the journal). The job will not end.
	Lost Status = "lost"
)

// Terminal reports whether the status is final.
func (s Status) Terminal() bool { return s == Done || s == Failed || s == Cancelled }

// PollInterval is how often a job waiting for a clarification looks for
// its answer, on the scheduler's clock.
const PollInterval = 200 * time.Millisecond

// Result is what a job's function returns: the handler's data and its
// domain error (Err), or an infrastructure failure (Infra).
type Result struct {
	Data  map[string]any
	Err   error
	Infra error
}

// Func is a job's work. It must return when ctx ends.
type Func func(ctx context.Context) Result

// Spec describes a job to start.
type Spec struct {
	Handler string // the invoke name, e.g. host.run
	Origin  string // the state whose effect started it
	Call    string // the invoke's id:, "" when it has none
	Run     Func
}

// Question is a clarification a job asked for.
type Question struct {
	Prompt string            `json:"prompt"`
	Fields map[string]string `json:"fields,omitempty"`
}

// Info is a snapshot of a job, as host.jobs.* and expect_jobs see it.
type Info struct {
	ID       string
	Handler  string
	Origin   string
	Call     string
	Status   Status
	Question *Question // while awaiting input
	Error    string    // a failed job's error
	Started  time.Time
	Ended    time.Time // zero until terminal
}

// Map is the snapshot as a host result's data.
func (i Info) Map() map[string]any {
	m := map[string]any{"job_id": i.ID, "handler": i.Handler, "state": i.Origin, "status": string(i.Status)}
	if i.Call != "" {
		m["call"] = i.Call
	}
	if i.Question != nil {
		q := map[string]any{"prompt": i.Question.Prompt}
		if len(i.Question.Fields) > 0 {
			f := map[string]any{}
			for k, v := range i.Question.Fields {
				f[k] = v
			}
			q["fields"] = f
		}
		m["question"] = q
	}
	if i.Error != "" {
		m["error"] = i.Error
	}
	return m
}

// NoticeKind says what a notice reports.
type NoticeKind string

// The notice kinds.
const (
	NoticeAwaiting NoticeKind = "awaiting_input" // the job asked a question
	NoticeEnded    NoticeKind = "ended"          // the job reached a terminal status
)

// Notice is something that happened to a job, for the session to apply.
type Notice struct {
	Kind   NoticeKind
	Job    Info
	Result Result // NoticeEnded: what the job returned
	At     time.Time
	seq    int // the job's start order
	n      int // the notice's order of arrival
}

// Scheduler runs the background jobs of one session. It is safe for
// concurrent use.
type Scheduler struct {
	clk    clock.Clock
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a job parks, ends or wakes
	jobs    []*job
	notices []Notice
	nextN   int
	closed  bool
}

type job struct {
	s      *Scheduler
	info   Info
	seq    int
	busy   bool      // running and not parked
	asleep bool      // parked in Sleep
	vt     time.Time // the job's own time: its start, then each wake
	cancel context.CancelFunc
	killed bool // Cancel was called
	answer any
	has    bool // an answer is waiting
}

// New returns a scheduler on clk (nil: the system clock).
func New(clk clock.Clock) *Scheduler {
	if clk == nil {
		clk = clock.System{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler{clk: clk, base: ctx, cancel: cancel, changed: make(chan struct{})}
}

// Clock is the scheduler's clock.
func (s *Scheduler) Clock() clock.Clock { return s.clk }

// ErrClosed is Submit's error once the scheduler is closed.
var ErrClosed = errors.New("jobs: the session has ended; no background job can start")

// Submit starts a job and returns its id (job-1, job-2, … in start order).
func (s *Scheduler) Submit(sp Spec) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	ctx, cancel := context.WithCancel(s.base)
	j := &job{s: s, seq: len(s.jobs) + 1, busy: true, vt: s.clk.Now(), cancel: cancel}
	j.info = Info{ID: fmt.Sprintf("job-%d", j.seq), Handler: sp.Handler, Origin: sp.Origin, Call: sp.Call, Status: Running, Started: j.vt}
	s.jobs = append(s.jobs, j)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		res := sp.Run(context.WithValue(ctx, jobKey{}, j))
		s.end(j, res)
	}()
	return j.info.ID, nil
}

// end records a job's result and its notice.
func (s *Scheduler) end(j *job, res Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, timers := s.clk.(clock.Timers); !timers {
		j.vt = s.clk.Now()
	}
	switch {
	case j.killed:
		j.info.Status = Cancelled
		if res.Err == nil && res.Infra == nil {
			res.Infra = context.Canceled
		}
	case res.Infra != nil:
		j.info.Status, j.info.Error = Failed, res.Infra.Error()
	case res.Err != nil:
		j.info.Status, j.info.Error = Failed, res.Err.Error()
	default:
		j.info.Status = Done
	}
	j.info.Question, j.info.Ended, j.busy = nil, j.vt, false
	s.notify(Notice{Kind: NoticeEnded, Job: j.info, Result: res, At: j.vt, seq: j.seq})
}

// notify queues a notice and wakes Settle (under mu).
func (s *Scheduler) notify(n Notice) {
	n.n = s.nextN
	s.nextN++
	s.notices = append(s.notices, n)
	s.wake()
}

// wake signals a change (under mu).
func (s *Scheduler) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Settle waits until no job is running unparked: each is finished, parked
// on the clock (Sleep) or waiting for an answer. On a fake clock that is
// the point where advancing the clock decides what happens next; on the
// system clock a job asleep in Sleep is waited for (it wakes by itself),
// except one polling for an answer nobody has given.
func (s *Scheduler) Settle(ctx context.Context) error {
	for {
		s.mu.Lock()
		busy := slices.ContainsFunc(s.jobs, s.unsettled)
		ch := s.changed
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("jobs: waiting for background jobs to settle: %w", ctx.Err())
		}
	}
}

// unsettled reports whether Settle waits for j (under mu): a running job,
// and on a clock that moves by itself (not clock.Timers) a job asleep in
// Sleep too, since it wakes on its own, unless it waits for an answer
// nobody has given yet.
func (s *Scheduler) unsettled(j *job) bool {
	if j.busy {
		return true
	}
	if _, fake := s.clk.(clock.Timers); fake || !j.asleep {
		return false
	}
	return j.info.Status != AwaitingInput || j.has
}

// Take returns the queued notices and clears them, ordered by the time
// each happened on the jobs' clock, then by the jobs' start order, so jobs
// that end within one clock advance are delivered earliest first.
func (s *Scheduler) Take() []Notice {
	s.mu.Lock()
	out := s.notices
	s.notices = nil
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Notice) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if a.seq != b.seq {
			return a.seq - b.seq
		}
		return a.n - b.n
	})
	return out
}

// Pending reports whether notices are waiting to be taken.
func (s *Scheduler) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.notices) > 0
}

// List returns a snapshot of every job, in start order.
func (s *Scheduler) List() []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Info, len(s.jobs))
	for i, j := range s.jobs {
		out[i] = j.info
	}
	return out
}

// Get returns a job's snapshot.
func (s *Scheduler) Get(id string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.find(id)
	if err != nil {
		return Info{}, err
	}
	return j.info, nil
}

// find looks a job up (under mu); the error lists the ids there are.
func (s *Scheduler) find(id string) (*job, error) {
	for _, j := range s.jobs {
		if j.info.ID == id {
			return j, nil
		}
	}
	if len(s.jobs) == 0 {
		return nil, fmt.Errorf("no background job %q: this session has started none", id)
	}
	ids := make([]string, len(s.jobs))
	for i, j := range s.jobs {
		ids[i] = j.info.ID
	}
	return nil, fmt.Errorf("no background job %q (jobs: %s)", id, strings.Join(ids, ", "))
}

// Cancel ends a running job: its context is cancelled and it ends as
// cancelled. A job that already ended is an error naming its status.
func (s *Scheduler) Cancel(id string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.find(id)
	if err != nil {
		return Info{}, err
	}
	if j.info.Status.Terminal() {
		return j.info, fmt.Errorf("background job %s has already ended (%s); only a running job can be cancelled", id, j.info.Status)
	}
	j.killed = true
	j.busy = true // it runs again to return
	j.cancel()
	s.wake()
	return j.info, nil
}

// Answer hands a clarification answer to a job waiting for one; the job
// picks it up on its next poll (PollInterval on the scheduler's clock).
func (s *Scheduler) Answer(id string, answer any) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.find(id)
	if err != nil {
		return Info{}, err
	}
	if j.info.Status != AwaitingInput {
		return j.info, fmt.Errorf("background job %s is not waiting for an answer (status %s)", id, j.info.Status)
	}
	if j.has {
		return j.info, fmt.Errorf("background job %s already has an answer it has not read yet", id)
	}
	j.answer, j.has = answer, true
	s.wake()
	return j.info, nil
}

// Close cancels every job still running and waits for each to return, so
// nothing a job started (a process, a connection) outlives the session.
// Notices are dropped.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	for _, j := range s.jobs {
		if !j.info.Status.Terminal() {
			j.killed = true
		}
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

type jobKey struct{}

func fromContext(ctx context.Context) *job {
	j, _ := ctx.Value(jobKey{}).(*job)
	return j
}

// InJob reports whether ctx is a background job's.
func InJob(ctx context.Context) bool { return fromContext(ctx) != nil }

// ErrNotInJob is the error of Sleep's and RequestClarification's callers
// that are not a background job.
var ErrNotInJob = errors.New("only a background job can do this (mark the invoke background: true)")

// Sleep parks the job of ctx for d on the scheduler's clock. While parked
// the job does not count as busy for Settle; on a fake clock it wakes when
// the clock is advanced past its wake time, and that time becomes the
// job's own time (what orders the notices).
func Sleep(ctx context.Context, d time.Duration) error {
	j := fromContext(ctx)
	if j == nil {
		return ErrNotInJob
	}
	if d <= 0 {
		return ctx.Err()
	}
	s := j.s
	wake := make(chan struct{})
	s.mu.Lock()
	due := s.clk.Now().Add(d)
	fire := func() {
		s.mu.Lock()
		if !j.info.Status.Terminal() {
			j.busy = true // before Advance returns, so Settle waits for it
			j.vt = due
		}
		j.asleep = false
		s.mu.Unlock()
		close(wake)
	}
	var stop func() bool
	if t, ok := s.clk.(clock.Timers); ok {
		stop = t.AfterFunc(d, fire)
	} else {
		stop = time.AfterFunc(d, fire).Stop
	}
	j.busy, j.asleep = false, true
	s.wake()
	s.mu.Unlock()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		if stop() {
			s.mu.Lock()
			j.busy, j.asleep = true, false
			s.mu.Unlock()
		}
		return ctx.Err()
	}
}

// RequestClarification asks the session a question on behalf of the job
// of ctx: the job turns awaiting_input (the session posts an
// action_required notification) and waits, polling every PollInterval on
// the scheduler's clock, until host.jobs.answer_clarification hands it an
// answer, which it returns.
func RequestClarification(ctx context.Context, q Question) (any, error) {
	j := fromContext(ctx)
	if j == nil {
		return nil, fmt.Errorf("request_clarification: %w", ErrNotInJob)
	}
	s := j.s
	s.mu.Lock()
	j.info.Status = AwaitingInput
	qq := q
	j.info.Question = &qq
	s.notify(Notice{Kind: NoticeAwaiting, Job: j.info, At: j.vt, seq: j.seq})
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if j.has {
			a := j.answer
			j.answer, j.has = nil, false
			j.info.Status, j.info.Question = Running, nil
			s.mu.Unlock()
			return a, nil
		}
		s.mu.Unlock()
		if err := Sleep(ctx, PollInterval); err != nil {
			return nil, fmt.Errorf("request_clarification %q: %w", q.Prompt, err)
		}
	}
}
