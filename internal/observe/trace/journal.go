package trace

import "slices"

// The kinds of the events a durable session writes so that it can be
// resumed, and of the events that say how a call was retried, replayed or
// issued again (docs/tracing/trace-format.md, "Session journal"). Each has
// its payload type below, shared by the writers (the orchestrator, the
// session package, the cluster's activity) and their readers.
const (
	// KindSnapshot is the state, turn and world after a turn.
	KindSnapshot = "kitsoki.snapshot"
	// KindDecisions lists a turn's decisions in order, at its end.
	KindDecisions = "kitsoki.decisions"
	// KindResumed is the first event of a resumed attempt at a turn: the
	// turn a crash left unfinished (redo), or the next one.
	KindResumed = "kitsoki.resumed"
	// KindCallReplayed is a call of a redone turn answered from the
	// journal instead of being issued again.
	KindCallReplayed = "kitsoki.call.replayed"
	// KindCallSkipped is an external_side_effect call in flight at a
	// crash that a resume skipped (--resume-side-effects=skip).
	KindCallSkipped = "kitsoki.call.skipped"
	// KindCallRetry is written before a call that failed is issued again
	// under its invoke's retry:.
	KindCallRetry = "kitsoki.call.retry"
	// KindCallReissued is written in a Temporal session after the events
	// of a call answered on a later attempt than the first.
	KindCallReissued = "kitsoki.call.reissued"
)

// Snapshot is kitsoki.snapshot: where a turn left the session. Exit names
// the @exit: target of a turn that reached a terminal state (Done). Jobs
// are the background jobs that had not ended when the turn did, so a
// reader of the journal alone (an inspect from another process) knows
// them; journals written before the field read as having none.
type Snapshot struct {
	Done      bool           `json:"done,omitempty"`
	Exit      string         `json:"exit,omitempty"`
	Jobs      []SnapshotJob  `json:"jobs,omitempty"`
	State     string         `json:"state"`
	StoryHash string         `json:"story_hash,omitempty"`
	Turn      int64          `json:"turn"`
	World     map[string]any `json:"world"`
}

// SnapshotJob is a background job a snapshot records as not ended: its
// id, handler, the state that started it, its status (running or
// awaiting_input) and, while it awaits input, its question's prompt.
type SnapshotJob struct {
	Handler string `json:"handler"`
	JobID   string `json:"job_id"`
	Prompt  string `json:"prompt,omitempty"`
	State   string `json:"state"`
	Status  string `json:"status"`
}

// OpenJobs is the list of jobs not ended that a session's job events
// describe, in start order: job.started adds one (running),
// job.awaiting_input marks it awaiting_input with its prompt,
// job.completed removes it. The orchestrator keeps one to write into its
// snapshots; a journal's reader folds the events after the last
// snapshot into the snapshot's.
type OpenJobs []SnapshotJob

// Apply returns the list after event payload p; a payload of another kind
// leaves it as it is.
func (o OpenJobs) Apply(p Payload) OpenJobs {
	switch p := p.(type) {
	case *JobStarted:
		return o.Apply(*p)
	case *JobAwaitingInput:
		return o.Apply(*p)
	case *JobCompleted:
		return o.Apply(*p)
	case JobStarted:
		o = o.without(p.JobID)
		return append(o[:len(o):len(o)], SnapshotJob{JobID: p.JobID, Handler: p.Handler, State: p.State, Status: "running"})
	case JobAwaitingInput:
		for i := range o {
			if o[i].JobID == p.JobID {
				o = slices.Clone(o) // a list handed out (a snapshot's) stays as it was
				o[i].Status, o[i].Prompt = "awaiting_input", p.Prompt
				return o
			}
		}
		return append(o[:len(o):len(o)], SnapshotJob{JobID: p.JobID, Handler: p.Handler, State: p.State, Status: "awaiting_input", Prompt: p.Prompt})
	case JobCompleted:
		return o.without(p.JobID)
	}
	return o
}

func (o OpenJobs) without(id string) OpenJobs {
	out := o[:0:0]
	for _, j := range o {
		if j.JobID != id {
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Decisions is kitsoki.decisions: a turn's decisions in the order it made
// them.
type Decisions struct {
	Decisions []Decision `json:"decisions"`
}

// Decision is one choice a turn made: an arm taken (Arm is its index in
// its on: list; Intent and Target are set) or a call queued (Namespace,
// and Call for an invoke with an id:). State is the state it was made in.
type Decision struct {
	Arm       *int   `json:"arm,omitzero"`
	Call      string `json:"call,omitempty"`
	Intent    string `json:"intent,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	State     string `json:"state"`
	Target    string `json:"target,omitempty"`
}

// ArmTaken is the decision to take arm index of intent's on: list in
// state, going to target.
func ArmTaken(state, intent string, index int, target string) Decision {
	return Decision{Arm: &index, Intent: intent, State: state, Target: target}
}

// CallQueued is the decision to queue the invoke namespace (call: its
// id:, "" without one) in state.
func CallQueued(state, namespace, call string) Decision {
	return Decision{Call: call, Namespace: namespace, State: state}
}

// Resumed is kitsoki.resumed. AfterTurn is the last finished turn (-1
// when turn 0 never finished); Redo says an unfinished turn is taken
// again, and Reissued lists its calls that had not returned (nil when
// there is no such turn).
type Resumed struct {
	AfterTurn int64    `json:"after_turn"`
	Redo      bool     `json:"redo"`
	Reissued  []string `json:"reissued,omitzero"`
}

// CallReplayed is kitsoki.call.replayed: Position is the call's place
// among the turn's dispatches.
type CallReplayed struct {
	Namespace string `json:"namespace"`
	Position  int    `json:"position"`
}

// CallSkipped is kitsoki.call.skipped, with the fields of CallReplayed.
type CallSkipped struct {
	Namespace string `json:"namespace"`
	Position  int    `json:"position"`
}

// CallRetry is kitsoki.call.retry: the attempt about to be made (of
// Attempts), the failure that caused it (its kind and text), and the
// backoff waited first.
type CallRetry struct {
	Attempt     int    `json:"attempt"`
	Attempts    int    `json:"attempts"`
	Call        string `json:"call,omitempty"`
	Error       string `json:"error"`
	FailureKind string `json:"kind"`
	Namespace   string `json:"namespace"`
	WaitMS      int64  `json:"wait_ms"`
}

// CallReissued is kitsoki.call.reissued: the activity attempt that
// answered the call.
type CallReissued struct {
	Attempt   int    `json:"attempt"`
	Namespace string `json:"namespace"`
}

func (Snapshot) Kind() string     { return KindSnapshot }
func (Decisions) Kind() string    { return KindDecisions }
func (Resumed) Kind() string      { return KindResumed }
func (CallReplayed) Kind() string { return KindCallReplayed }
func (CallSkipped) Kind() string  { return KindCallSkipped }
func (CallRetry) Kind() string    { return KindCallRetry }
func (CallReissued) Kind() string { return KindCallReissued }

// newJournalPayload is NewPayload for the kinds above.
func newJournalPayload(kind string) (Payload, bool) {
	switch kind {
	case KindSnapshot:
		return &Snapshot{}, true
	case KindDecisions:
		return &Decisions{}, true
	case KindResumed:
		return &Resumed{}, true
	case KindCallReplayed:
		return &CallReplayed{}, true
	case KindCallSkipped:
		return &CallSkipped{}, true
	case KindCallRetry:
		return &CallRetry{}, true
	case KindCallReissued:
		return &CallReissued{}, true
	}
	return nil, false
}

func (p Snapshot) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("exit", &p.Exit)
	s.str("state", &p.State)
	s.str("story_hash", &p.StoryHash)
	s.obj("world", &p.World)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p Decisions) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	var out []Decision
	for i := range p.Decisions {
		d := p.Decisions[i]
		if masked, changed := s.typed("decisions"+indexSeg(i), d); changed {
			if out == nil {
				out = slices.Clone(p.Decisions)
			}
			out[i] = masked.(Decision)
		}
	}
	if out != nil {
		p.Decisions, s.changed = out, true
	}
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p Decision) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("call", &p.Call)
	s.str("intent", &p.Intent)
	s.str("namespace", &p.Namespace)
	s.str("state", &p.State)
	s.str("target", &p.Target)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p Resumed) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	if out, changed, err := s.strings(p.Reissued); err != nil {
		s.fail("reissued", err)
	} else if changed {
		p.Reissued, s.changed = out.([]string), true
	}
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p CallReplayed) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p CallSkipped) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p CallRetry) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("call", &p.Call)
	s.str("error", &p.Error)
	s.str("kind", &p.FailureKind)
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p CallReissued) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}
