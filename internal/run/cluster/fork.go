package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// QueryCarry answers the SessionInput a new workflow needs to go on from
// where the session stands: its story (the bundle it started with), its
// routing and a Snapshot of its state, world, turn, armed timeouts, room
// history and overlays. A fork starts a workflow with it. The query is
// refused while turn 0 or a turn runs (ErrTurnRunning's text).
const QueryCarry = "carry"

// MemoForkedFrom is the memo key naming the session a fork was started
// from.
const MemoForkedFrom = "kitsoki.forked_from"

// ForkOrigin names the session and turn a session was forked from.
type ForkOrigin struct {
	SessionID string `json:"session_id"`
	Turn      int64  `json:"turn"`
}

// errTurnRunning is the carry query's refusal while a turn runs.
var errTurnRunning = errors.New("a turn is running in the session")

// carry is the input of a workflow that goes on from where the session
// stands (a fork's, or a continue-as-new's).
func (v sessionView) carry() *SessionInput {
	next := *v.in
	next.World = Value{}
	next.Root = ""
	next.Audit = nil
	next.Carried = &Snapshot{State: v.sess.State(), World: Value{orchestrator.DeepCopy(v.sess.World())}, Turn: v.sess.TurnNumber(),
		Timeouts: v.sess.Timeouts(), Handover: v.sess.Handover()}
	return &next
}

// registerCarry registers the carry query; ready says when no turn runs.
func registerCarry(ctx workflow.Context, v sessionView, ready func() bool) error {
	err := workflow.SetQueryHandler(ctx, QueryCarry, func() (*SessionInput, error) {
		if !ready() {
			return nil, errTurnRunning
		}
		return v.carry(), nil
	})
	if err != nil {
		return fmt.Errorf("query %s: %w", QueryCarry, err)
	}
	return nil
}

// lastTurnAt is the time the session's last turn ended: the ts of the
// last event this run traced, else (a run continued as new, or a fork,
// that has taken no turn yet) the run's start, which follows the last
// turn of the run before.
func (v sessionView) lastTurnAt() time.Time {
	b := bytes.TrimRight(v.sink.Bytes(), "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		var ev struct {
			TS string `json:"ts"`
		}
		if json.Unmarshal(b[i+1:], &ev) == nil {
			if t, err := time.Parse(time.RFC3339Nano, ev.TS); err == nil {
				return t.UTC()
			}
		}
	}
	return workflow.GetInfo(v.ctx).WorkflowStartTime.UTC()
}

// ForkRequest asks for a fork of a running session at one of its
// finished turns.
type ForkRequest struct {
	// Ref is the session to fork (its id, which is its key for a keyed
	// session).
	Ref string
	// ID names the fork; it must be free on the cluster.
	ID string
	// AtTurn, when set, is the turn to fork at: the session's current turn
	// or an earlier one (0 to current; any other is refused with a
	// *TurnError, nothing started). Nil is the current turn.
	AtTurn *int64
	// Stories reads the session's story bundle, which an earlier turn is
	// found by replaying the session's trace through. Only a fork at an
	// earlier turn needs it.
	Stories *Stories
}

// TurnError is a fork asked at a turn the session has not finished.
type TurnError struct {
	ID         string
	At, Actual int64
}

func (e *TurnError) Error() string {
	return fmt.Sprintf("session %s has no finished turn %d: its turns are 0 to %d; give --at-turn from 0 to %d, or leave it out to fork at turn %d", e.ID, e.At, e.Actual, e.Actual, e.Actual)
}

// Fork starts a new session from where the running session r.Ref stood
// after turn r.AtTurn (its current turn when nil): the same story bundle
// and routing, and that turn's state, world, turn, armed timeouts, room
// history and overlays, as a workflow of its own on the same task queue.
// The current turn's come from the carry query; an earlier turn's from
// replaying the session's trace through its story (ReplayAt). The old
// session is not changed. The fork's trace starts at the fork, its header
// naming the session and turn it came from.
func (c *Client) Fork(ctx context.Context, r ForkRequest) (*SessionInfo, error) {
	si, err := c.Describe(ctx, r.Ref)
	if err != nil {
		return nil, err
	}
	if !si.Running() {
		return nil, fmt.Errorf("cannot fork session %s: %w; a session on a cluster is forked from its running workflow, so only a running one can be", r.Ref, &ClosedError{Info: si})
	}
	in, err := c.carry(ctx, r.Ref)
	if err != nil {
		return nil, err
	}
	if r.AtTurn != nil && (*r.AtTurn < 0 || *r.AtTurn > in.Carried.Turn) {
		return nil, &TurnError{ID: r.Ref, At: *r.AtTurn, Actual: in.Carried.Turn}
	}
	if r.AtTurn != nil && *r.AtTurn < in.Carried.Turn {
		snap, err := c.snapshotAt(ctx, r, in)
		if err != nil {
			return nil, err
		}
		in.Carried = snap
	}
	in.SessionID = r.ID
	in.Fork = &ForkOrigin{SessionID: r.Ref, Turn: in.Carried.Turn}
	m := memo(in.Story, si.AppID)
	m[MemoForkedFrom] = r.Ref
	if err := c.start(ctx, *in, si.TaskQueue, m); err != nil {
		return nil, fmt.Errorf("fork session %s: %w", r.Ref, err)
	}
	return c.Describe(ctx, r.ID)
}

// snapshotAt is where session r.Ref stood after turn *r.AtTurn: its trace
// (every run's, TraceJSONL) replayed through the story bundle it runs,
// every call answered from the trace. A fork's trace starts at its fork:
// it is replayed from the session its first run was started with (the
// carried snapshot), and a turn before the fork is the parent's, found in
// the parent's trace the same way.
func (c *Client) snapshotAt(ctx context.Context, r ForkRequest, in *SessionInput) (*Snapshot, error) {
	at := *r.AtTurn
	if r.Stories == nil {
		return nil, fmt.Errorf("fork session %s at turn %d: no story store to replay its trace through (the blob store the workers share)", r.Ref, at)
	}
	st, err := r.Stories.Load(in.Story)
	if err != nil {
		return nil, fmt.Errorf("fork session %s at turn %d: %w", r.Ref, at, err)
	}
	b, err := c.TraceJSONL(ctx, r.Ref)
	if err != nil {
		return nil, err
	}
	hdr, evs, err := trace.ReadAll(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("fork session %s at turn %d: its trace: %w", r.Ref, at, err)
	}
	var from *runtime.Seed
	switch {
	case hdr.ForkedFrom != "" && at < hdr.ForkedAtTurn:
		parent := r
		parent.Ref = hdr.ForkedFrom
		snap, err := c.snapshotAt(ctx, parent, in)
		if err != nil {
			return nil, fmt.Errorf("fork session %s at turn %d, which it has from session %s (it was forked from it at turn %d): %w",
				r.Ref, at, hdr.ForkedFrom, hdr.ForkedAtTurn, err)
		}
		return snap, nil
	case hdr.ForkedFrom != "":
		if from, err = c.forkSeed(ctx, r.Ref, hdr.ForkedAtTurn); err != nil {
			return nil, fmt.Errorf("fork session %s at turn %d: %w", r.Ref, at, err)
		}
	case len(evs) == 0 || evs[0].Turn != 0:
		return nil, fmt.Errorf("fork session %s at turn %d: its trace does not start at turn 0 and names no session it was forked from, so only its current turn %d can be forked",
			r.Ref, at, in.Carried.Turn)
	}
	snap, err := replayedSnapshot(ctx, st, r.Ref, evs, at, routing(*in), from)
	if err != nil {
		return nil, fmt.Errorf("fork session %s at turn %d: %w", r.Ref, at, err)
	}
	return snap, nil
}

// forkSeed is where fork id's replay starts: the session its first run
// was started with, which stands after turn turn of its parent.
func (c *Client) forkSeed(ctx context.Context, id string, turn int64) (*runtime.Seed, error) {
	start, err := c.startInput(ctx, id)
	if err != nil {
		return nil, err
	}
	snap := start.Carried
	if snap == nil || snap.Turn != turn {
		return nil, fmt.Errorf("its first run did not start from turn %d, where its trace's header says it was forked", turn)
	}
	return &runtime.Seed{Turn: snap.Turn, Restore: func(s *orchestrator.Session) error { return restore(s, snap) }}, nil
}

// replayedSnapshot is what the carry query would have answered after turn
// at of session id: its trace evs replayed through st (runtime.ReplayAt),
// from turn 0, or from seed when the trace starts after it.
func replayedSnapshot(ctx context.Context, st *story.Story, id string, evs []trace.Event, at int64, rc orchestrator.RoutingConfig, seed *runtime.Seed) (*Snapshot, error) {
	rt, err := runtime.ReplayAt(ctx, st, runtime.Replay{ID: id, Events: evs, UpTo: at, Routing: rc, From: seed})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	sess := rt.Session()
	return &Snapshot{State: sess.State(), World: Value{orchestrator.DeepCopy(sess.World())}, Turn: at,
		Timeouts: sess.Timeouts(), Handover: sess.Handover()}, nil
}

// carry waits for a running turn (the attach update), then reads the
// carry query; a turn another client started in between is waited for
// again.
func (c *Client) carry(ctx context.Context, id string) (*SessionInput, error) {
	for attempt := 1; ; attempt++ {
		if _, err := c.Attach(ctx, id); err != nil {
			return nil, err
		}
		v, err := c.c.QueryWorkflow(ctx, id, "", QueryCarry)
		if err != nil {
			if attempt < maxContinuedRetries && errorsHasText(err, errTurnRunning.Error()) {
				continue
			}
			return nil, fmt.Errorf("session %s: query %s: %w", id, QueryCarry, err)
		}
		var in SessionInput
		if err := v.Get(&in); err != nil {
			return nil, fmt.Errorf("session %s: query %s: %w", id, QueryCarry, err)
		}
		return &in, nil
	}
}

func errorsHasText(err error, text string) bool {
	return err != nil && strings.Contains(err.Error(), text)
}

// PruneResult is what Prune did: the sessions it deleted (or, dry, would
// delete) and those it left because where they stand could not be read.
type PruneResult struct {
	Deleted []SessionInfo
	Skipped []SessionInfo
}

// LastActivity is what retention measures a session by: a closed
// session's close time; a running one's last turn (SessionStatus.LastTurn,
// which reading it does not change). Zero when a running session's status
// could not be read.
func (s *SessionInfo) LastActivity() time.Time {
	if !s.Running() {
		return s.Closed
	}
	if s.State == "" {
		return time.Time{}
	}
	return s.Updated
}

// Prune deletes every session whose last activity (LastActivity) is
// before cutoff: a closed one's workflow and history, a running one's
// too, terminated first (an idle session is let go as a local prune lets
// it go). A running session whose status no worker answered is left, in
// Skipped. With dry nothing is deleted.
func (c *Client) Prune(ctx context.Context, cutoff time.Time, dry bool) (PruneResult, error) {
	all, err := c.List(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	var res PruneResult
	var errs []error
	for _, si := range all {
		at := si.LastActivity()
		switch {
		case at.IsZero():
			res.Skipped = append(res.Skipped, si)
			continue
		case !at.Before(cutoff):
			continue
		}
		if !dry {
			if err := c.Delete(ctx, si.ID); err != nil && !errors.Is(err, ErrNoSession) {
				errs = append(errs, err)
				continue
			}
		}
		res.Deleted = append(res.Deleted, si)
	}
	return res, errors.Join(errs...)
}
