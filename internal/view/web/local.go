package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// Local is Sessions over a sessions directory in this process: each
// session a runtime that runtime.Open wires, journaled in the directory
// (its trace holds the writer lock while the server holds the session).
type Local struct {
	Store session.Store
	// Load loads the story whose root file is path. Required.
	Load func(path string) (*story.Story, error)
	// Config is the runtime configuration of a session of st (agents,
	// cassette, logger); done, when set, runs after the session closed.
	// The session, trace and dispatch hook are set here. Required.
	Config func(st *story.Story) (cfg runtime.Config, done func() error, err error)
}

// ErrFinished is Open's error for a session that reached a terminal state:
// it is looked at (Inspect) or forked, not continued.
var ErrFinished = errors.New("the session finished")

// Create starts a new session and runs its turn 0.
func (l *Local) Create(ctx context.Context, r CreateRequest, h Hooks) (Session, error) {
	if err := session.CheckID(r.ID); err != nil {
		return nil, err
	}
	st, err := l.Load(r.Story)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	m := session.Meta{ID: r.ID, AppID: st.App.ID, Story: st.File, StoryHash: st.ContentHash, Version: version.String(),
		Trace: l.Store.TracePath(r.ID), Created: now, Updated: now}
	hdr := trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: m.StoryHash, KitsokiVersion: m.Version, SessionID: m.ID}
	s, err := l.open(st, m, &runtime.Session{ID: r.ID, Journal: true}, hdr, h)
	if err != nil {
		return nil, err
	}
	s.save()
	if _, err := s.sess.Start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.save()
	return s, nil
}

// Open resumes an unfinished session from its journal.
func (l *Local) Open(ctx context.Context, id string, h Hooks) (Session, error) {
	m, j, st, err := l.journal(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.Finished || j.Done {
		st.Close()
		return nil, fmt.Errorf("session %s: %w in state %q at turn %d; fork it to go on", id, ErrFinished, j.State, j.Turn)
	}
	if err := j.Partial.CheckSideEffects(st, session.SideEffectsStop); err != nil {
		st.Close()
		return nil, err
	}
	rs := &runtime.Session{ID: m.ID, Journal: true, Resume: &runtime.Resume{Journal: j}}
	s, err := l.open(st, m, rs, trace.HeaderInfo{}, h)
	if err != nil {
		return nil, err
	}
	if _, err := session.Resume(ctx, s.sess, s.rt.Sink(), j); err != nil {
		s.Close()
		return nil, err
	}
	s.save()
	return s, nil
}

// journal reads the journal of session id and loads its story, checking
// that the story still decides as the journal did.
func (l *Local) journal(ctx context.Context, id string) (session.Meta, *session.Journal, *story.Story, error) {
	m, err := l.Store.Get(id)
	if err != nil {
		return m, nil, nil, err
	}
	if _, err := l.Store.Journal(m, ""); err != nil {
		return m, nil, nil, err
	}
	j, err := session.Load(m.Trace)
	var fe *trace.FormatError
	if err != nil && errors.As(err, &fe) && strings.Contains(fe.Msg, "missing trailing newline") {
		if _, rerr := trace.RepairTail(m.Trace); rerr == nil { // a line a crash left half-written
			j, err = session.Load(m.Trace)
		}
	}
	if err != nil {
		return m, nil, nil, err
	}
	st, err := l.Load(m.Story)
	if err != nil {
		return m, nil, nil, fmt.Errorf("session %s runs %s, which does not load now: %w", m.ID, m.Story, err)
	}
	if j.StoryHash != "" && j.StoryHash != st.ContentHash {
		_, evs, err := session.ReadAll(m.Trace, -1)
		if err == nil {
			var div *session.Divergence
			if div, _, err = runtime.CheckJournal(ctx, st, m.ID, evs); err == nil && div != nil {
				err = errors.New(div.Error())
			}
		}
		if err != nil {
			st.Close()
			return m, nil, nil, fmt.Errorf("session %s: the story changed since it started and decides differently: %w (fork it from an earlier turn)", m.ID, err)
		}
	}
	return m, j, st, nil
}

// Inspect reports where a session stands from its journal, holding
// nothing.
func (l *Local) Inspect(ctx context.Context, id string) (session.Meta, *Status, error) {
	m, j, st, err := l.journal(ctx, id)
	if err != nil {
		return m, nil, err
	}
	defer st.Close()
	m = j.Describe(m)
	if !j.Started {
		return m, &Status{ID: m.ID, World: map[string]any{}}, nil
	}
	rt, err := runtime.Open(st, runtime.Config{IgnorePins: true, Session: &runtime.Session{ID: m.ID}})
	if err != nil {
		return m, nil, err
	}
	defer rt.Close()
	w := orchestrator.DeepCopy(j.World).(map[string]any)
	session.Retype(st, w)
	if err := rt.Session().Restore(j.State, w, j.Turn); err != nil {
		return m, nil, fmt.Errorf("session %s: %w", m.ID, err)
	}
	return m, statusOf(rt.Session()), nil
}

// open wires the runtime of session m.
func (l *Local) open(st *story.Story, m session.Meta, rs *runtime.Session, hdr trace.HeaderInfo, h Hooks) (*localSession, error) {
	cfg, done, err := l.Config(st)
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg.Session = rs
	cfg.Trace.Path, cfg.Trace.Header = m.Trace, hdr
	cfg.SessionsDir = l.Store.Dir
	if h.OnCall != nil {
		cfg.OnDispatch = func(c *host.Call) func() { return h.OnCall(callOf(c)) }
	}
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		st.Close()
		if done != nil {
			err = errors.Join(err, done())
		}
		if errors.Is(err, trace.ErrLocked) {
			err = fmt.Errorf("session %s is held by another process (its journal %s: %w); try again once it lets go", m.ID, m.Trace, err)
		}
		return nil, err
	}
	return &localSession{l: l, st: st, rt: rt, sess: rt.Session(), meta: m, done: done}, nil
}

// callOf is a dispatched call as the page shows it: an agent call names
// its agent_plugins alias (agent.claude on the built-in path).
func callOf(c *host.Call) Call {
	out := Call{Handler: c.Namespace, Purpose: c.Purpose}
	if strings.HasPrefix(c.Namespace, host.AgentNamespace) {
		out.Agent = orchestrator.DefaultRouter
		if c.Invoke != nil && c.Invoke.Agent != "" {
			out.Agent = c.Invoke.Agent
		}
	}
	return out
}

// Fork writes a new session from turn at of session id.
func (l *Local) Fork(id string, at int64) (session.Meta, error) {
	m, err := l.Store.Get(id)
	if err != nil {
		return m, err
	}
	if _, err := l.Store.Journal(m, ""); err != nil {
		return m, err
	}
	nid := NewSessionID()
	dst := l.Store.TracePath(nid)
	hdr := trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: m.StoryHash, KitsokiVersion: version.String(),
		SessionID: nid, ForkedFrom: m.ID, ForkedAtTurn: at}
	j, err := session.Fork(m.Trace, at, dst, hdr)
	if err != nil {
		return session.Meta{}, fmt.Errorf("session %s: %w", m.ID, err)
	}
	now := time.Now().UTC()
	fm := j.Describe(session.Meta{ID: nid, AppID: m.AppID, Story: m.Story, StoryHash: m.StoryHash, Version: version.String(),
		Trace: dst, Created: now, Updated: now, ForkedFrom: m.ID, ForkedAt: at})
	fm.Updated = now
	return fm, l.Store.Put(fm)
}

// List lists the directory's sessions.
func (l *Local) List() ([]session.Meta, error) { return l.Store.List() }

// Get is session id's index entry.
func (l *Local) Get(id string) (session.Meta, error) { return l.Store.Get(id) }

// localSession is a session Local opened.
type localSession struct {
	l    *Local
	st   *story.Story
	rt   *runtime.Runtime
	sess *orchestrator.Session
	meta session.Meta
	done func() error
}

func (s *localSession) ID() string          { return s.meta.ID }
func (s *localSession) Story() *story.Story { return s.st }
func (s *localSession) Meta() session.Meta  { return s.meta }

// Take takes one input: a typed intent, or a raw line read as the
// terminal reads one (free text is routed).
func (s *localSession) Take(ctx context.Context, in Input) error {
	var err error
	switch {
	case in.Kind == KindIntent:
		line, _ := LineOf(in.Intent, in.Slots) // the journal's record, re-read by a resume
		_, err = s.sess.Turn(ctx, in.Intent, in.Slots, line)
	case s.sess.IsFreeText(in.Text):
		_, err = s.sess.Say(ctx, in.Text)
	default:
		intent, slots, perr := s.sess.ParseInput(in.Text)
		if perr != nil {
			return &InputError{Err: perr}
		}
		_, err = s.sess.Turn(ctx, intent, slots, in.Text)
	}
	s.save()
	return err
}

func (s *localSession) Status() (*Status, error) { return statusOf(s.sess), nil }

func (s *localSession) OverrideWorld(kv map[string]any) error { return s.sess.OverrideWorld(kv) }

// save writes the session's index entry.
func (s *localSession) save() {
	m := s.meta
	m.State, m.Turn = s.sess.State(), s.sess.TurnNumber()
	m.Finished, m.Exit = s.sess.Done()
	m.LastError, _ = s.sess.World()["last_error"].(string)
	if c, ok := s.sess.World()["session_cost_usd"].(float64); ok {
		m.CostUSD = c
	}
	m.Updated = time.Now().UTC()
	if w, ok := s.rt.Sink().(interface{ Size() int64 }); ok {
		m.TraceBytes = w.Size()
	}
	if err := s.l.Store.Put(m); err == nil {
		s.meta = m
	}
}

// Close saves the entry, closes the runtime (its trace and lock) and
// releases the story.
func (s *localSession) Close() error {
	s.save()
	errs := []error{s.rt.Close()}
	if s.done != nil {
		errs = append(errs, s.done())
	}
	return errors.Join(append(errs, s.st.Close())...)
}

// LineOf writes an intent and its slots as a typed line that reads back
// to the same values ("greet name=Ada style=formal"); ok is false when a
// value cannot be written so (it holds both kinds of quote, or a line
// break), and the line is then "".
func LineOf(intent string, slots map[string]any) (string, bool) {
	parts := []string{intent}
	for _, k := range slices.Sorted(maps.Keys(slots)) {
		var v string
		switch x := slots[k].(type) {
		case string:
			v = x
		case []any, map[string]any:
			b, err := json.Marshal(x)
			if err != nil {
				return "", false
			}
			v = string(b)
		default:
			v = fmt.Sprint(x)
		}
		switch {
		case strings.ContainsAny(v, "\n\r"):
			return "", false
		case v != "" && !strings.ContainsAny(v, " \t'\""):
		case !strings.Contains(v, `"`):
			v = `"` + v + `"`
		case !strings.Contains(v, "'"):
			v = "'" + v + "'"
		default:
			return "", false
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " "), true
}
