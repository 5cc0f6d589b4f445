package driver

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// Local is a session in this process: the runtime runtime.Open wired, and
// for a durable session its plan (the journal it resumes, the index entry
// it keeps, the writer lock it holds).
type Local struct {
	rt   *runtime.Runtime
	sess *orchestrator.Session
	plan *Plan // nil: not a durable session (the Go API's in-memory one)
	// mark is where the trace stood before the last turn: the events of
	// the turn are what was written since.
	mark int
	// lastSave is when the index entry was last written.
	lastSave time.Time
}

// SaveInterval is how often, at most, a running durable session writes
// its index entry at a turn's end (it always does when it starts and when
// it closes): `kitsoki session list` shows a running session as of a
// second ago at worst, and a scripted run of many fast turns does not pay
// for an entry per turn (a write of the entry costs more than a cheap turn).
const SaveInterval = time.Second

// OpenLocal opens the runtime of a session with cfg. With a plan, the
// session is that durable session: its id, journal, header and resume
// come from the plan, and the session's writer lock (which the plan
// holds) is released by Close. Without one, cfg says everything.
func OpenLocal(st *story.Story, cfg runtime.Config, plan *Plan) (*Local, error) {
	if plan != nil {
		if cfg.Session == nil {
			cfg.Session = &runtime.Session{}
		}
		s := *cfg.Session
		s.ID, s.Journal, s.Resume = plan.ID(), true, plan.Resume()
		cfg.Session = &s
		cfg.Trace.Path, cfg.Trace.Header = plan.Trace(), plan.Header()
	}
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		plan.Release()
		return nil, err
	}
	return &Local{rt: rt, sess: rt.Session(), plan: plan}, nil
}

// NewLocal drives the session of a runtime the caller opened (not a
// durable session of a store); Close closes the runtime.
func NewLocal(rt *runtime.Runtime) *Local { return &Local{rt: rt, sess: rt.Session()} }

// Runtime is the session's runtime (its plugins, sink, memory trace).
func (l *Local) Runtime() *runtime.Runtime { return l.rt }

// Session is the orchestrator's session.
func (l *Local) Session() *orchestrator.Session { return l.sess }

// Plan is the durable session's plan, nil for one that is not.
func (l *Local) Plan() *Plan { return l.plan }

func (l *Local) ID() string          { return l.sess.ID() }
func (l *Local) Story() *story.Story { return l.sess.Story() }

// Begin runs turn 0 of a new session, or brings a resumed one to where
// its journal stopped.
func (l *Local) Begin(ctx context.Context) (*orchestrator.Outcome, error) {
	l.mark = l.traceLen()
	if l.plan == nil {
		return l.sess.Start(ctx)
	}
	out, err := l.plan.start(ctx, l.sess, l.rt.Sink(), int64(l.traceLen()))
	l.lastSave = time.Time{} // the entry after turn 0 (or the redone turn)
	l.saved()
	return out, err
}

// Take takes one input: free text is routed (Session.Say), a typed line
// is parsed with the intent's slot types and taken (Session.Turn).
func (l *Local) Take(ctx context.Context, in Input) (*orchestrator.Outcome, error) {
	in, err := in.Recordable()
	if err != nil {
		return nil, err
	}
	l.mark = l.traceLen()
	out, err := l.take(ctx, in)
	if err == nil {
		l.saved()
	}
	return out, err
}

func (l *Local) take(ctx context.Context, in Input) (*orchestrator.Outcome, error) {
	switch in.Kind {
	case KindText:
		return l.sess.Say(ctx, in.Text)
	case KindIntent:
		// The journal records the input as a line that parses back to
		// the same slots, so a resume that takes the turn again has them.
		line := ""
		if len(in.Slots) > 0 {
			line, _ = LineOf(in.Intent, in.Slots)
		}
		return l.sess.Turn(ctx, in.Intent, in.Slots, line)
	case KindRaw:
		if l.sess.IsFreeText(in.Text) {
			return l.sess.Say(ctx, in.Text)
		}
	}
	intent, slots, err := l.sess.ParseInput(in.Text)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	return l.sess.Turn(ctx, intent, slots, in.Text)
}

// Back returns to the previous room.
func (l *Local) Back(ctx context.Context) (*orchestrator.Outcome, error) {
	l.mark = l.traceLen()
	out, err := l.sess.Back(ctx)
	if err == nil {
		l.saved()
	}
	return out, err
}

// Settle lets the background jobs still running finish (or park on a
// question); a job left waiting for an answer is cancelled when the
// session closes.
func (l *Local) Settle(ctx context.Context) ([]*orchestrator.Outcome, error) {
	outs, err := l.sess.Settle(ctx)
	if len(outs) > 0 {
		l.saved()
	}
	return outs, err
}

// OverrideWorld sets world keys the next turn writes (and traces, as a
// world.update) when it starts, before its guards run; the values are
// checked as initial values are (orchestrator.Session.OverrideWorld).
func (l *Local) OverrideWorld(kv map[string]any) error { return l.sess.OverrideWorld(kv) }

// Status is where the session stands.
func (l *Local) Status(context.Context) (*Status, error) {
	s := l.sess
	st := &Status{ID: s.ID(), State: s.State(), Turn: s.TurnNumber(), World: orchestrator.DeepCopy(s.World()).(map[string]any),
		Intents: Intents(s.AllowedIntents(), s.IntentDef)}
	if d := s.Story().States[s.State()]; d != nil {
		st.Description = d.Description
	}
	st.Done, st.Exit = s.Done()
	st.View, _ = s.View()
	st.ViewDoc, st.ViewErr = s.ViewDoc()
	st.Room = RoomOf(s)
	for _, j := range s.Jobs().List() {
		if j.Ended.IsZero() {
			st.Jobs = append(st.Jobs, j)
		}
	}
	return st, nil
}

// Skip skips a scripted line the resumed journal already took.
func (l *Local) Skip(_ context.Context, line string) (bool, error) {
	return l.plan.skipInput(line)
}

// Close saves a durable session's index entry, closes the runtime (its
// agents, the processes they started, the trace) and releases the
// session's writer lock.
func (l *Local) Close() error {
	if l.plan != nil {
		l.plan.save(l.sess, int64(l.traceLen()))
	}
	err := l.rt.Close()
	l.plan.Release()
	return err
}

// saved writes the durable session's index entry after a turn, at most
// once per SaveInterval (and at once when the session finished), so that
// `kitsoki session list` sees a running session's progress.
func (l *Local) saved() {
	if l.plan == nil {
		return
	}
	done, _ := l.sess.Done()
	if now := time.Now(); done || now.Sub(l.lastSave) >= SaveInterval {
		l.plan.save(l.sess, int64(l.traceLen()))
		l.lastSave = now
	}
}

// TurnEvents are the trace lines written since the last Begin, Take or
// Back began (masked, as the trace holds them).
func (l *Local) TurnEvents() ([]byte, error) {
	b, err := l.traceBytes()
	if err != nil || l.mark > len(b) {
		return nil, err
	}
	return b[l.mark:], nil
}

// Trace is the trace written so far (the journal's bytes, or memory's).
func (l *Local) Trace() ([]byte, error) { return l.traceBytes() }

func (l *Local) traceBytes() ([]byte, error) {
	if m := l.rt.Memory(); m != nil {
		return m.Bytes(), nil
	}
	if w := l.rt.File(); w != nil {
		return os.ReadFile(w.Path())
	}
	return nil, errors.New("the session's trace is a sink of the caller's")
}

func (l *Local) traceLen() int {
	if m := l.rt.Memory(); m != nil {
		return len(m.Bytes())
	}
	if w := l.rt.File(); w != nil {
		return int(w.Size())
	}
	return 0
}
