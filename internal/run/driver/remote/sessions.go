package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// Sessions is the session API on a Temporal cluster: what driver.Sessions
// is over a sessions directory, for sessions that are workflows. A
// session's id is its workflow id, and a key (transport:thread) is the
// workflow id itself, so finding a session by its key is one describe.
// Every front end that drives a cluster session by its name goes through
// it: `kitsoki session … --temporal`, the MCP session tools of `kitsoki
// mcp serve --temporal`, and the Go API's Resume with a cluster. Its
// frames are driver.Frame, built by the same code as a local session's
// (without events: the trace is on the cluster).
//
// Temporal takes the updates of one workflow one at a time, so a second
// continue of a session waits for the first instead of being refused as
// busy.
type Sessions struct {
	Client *cluster.Client
	// Stories reads a running session's story: its bundle from the blob
	// store, or, for a session without one, the stories directory.
	Stories *cluster.Stories
	// Load loads the story file of a new session (this client's copy,
	// for its content hash and to parse input lines). Required by Create.
	Load func(path string) (*story.Story, error)
	// Pack names a new session's story for the workers: its bundle in the
	// blob store (cluster.PackStory), or its path in the workers' stories
	// directory. Required by Create.
	Pack func(path string, st *story.Story) (cluster.StoryRef, error)
	// Stderr receives what the driver tells (a reattach, a changed
	// story); nil discards it.
	Stderr io.Writer
}

// Create starts a session of r.Story on the cluster (turn 0 runs on a
// worker) and reports it. Its workflow id is r.Key, else r.ID, else a
// generated id; one in use is refused. a names the caller for the
// session's trace (its zero value writes no record); the record follows
// turn 0, as a local Pool writes it.
func (s *Sessions) Create(ctx context.Context, r driver.CreateRequest, a driver.Audit) (_ *driver.Frame, err error) {
	id := r.ID
	if r.Key != "" {
		if r.ID != "" {
			return nil, driver.Exit(driver.ExitUsage, errors.New("give a key or a session id, not both: on a cluster a key is the session's workflow id"))
		}
		if err := session.CheckKey(r.Key); err != nil {
			return nil, driver.Exit(driver.ExitUsage, err)
		}
		id = r.Key
	}
	st, err := s.Load(r.Story)
	if err != nil {
		return nil, driver.Exit(driver.ExitLoad, err)
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if err := orchestrator.CheckWorld(st, r.World); err != nil {
		return nil, driver.Exit(driver.ExitUsage, err)
	}
	if id != "" {
		if _, err := s.Client.Describe(ctx, id); err == nil {
			return nil, driver.Exit(driver.ExitFailure, fmt.Errorf("session %s exists on the cluster; continue it (kitsoki session continue %s --temporal %s), or delete it first", id, id, s.Client.HostPort()))
		}
	}
	ref, err := s.Pack(r.Story, st)
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	d, err := Open(ctx, s.Client, Request{Story: st, Ref: ref, ID: id, World: r.World, Root: r.Root, Routing: r.Routing, Stderr: s.stderr(), Audit: auditOf(a)})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out, _ := d.Begin(ctx)
	return s.frame(ctx, d, ref, r.Key, out, "started")
}

// Open reattaches to the running session ref names, its story read from
// its bundle. Close the driver, and the story (Driver.Story), when done.
func (s *Sessions) Open(ctx context.Context, ref string) (*Driver, cluster.StoryRef, error) {
	si, err := s.Client.Describe(ctx, ref)
	if err != nil {
		return nil, cluster.StoryRef{}, driver.Exit(driver.ExitFailure, err)
	}
	if !si.Running() {
		return nil, si.Story, driver.Exit(driver.ExitFailure, &cluster.ClosedError{Info: si})
	}
	st, err := s.Stories.Load(si.Story)
	if err != nil {
		return nil, si.Story, driver.Exit(driver.ExitFailure, err)
	}
	d, err := Open(ctx, s.Client, Request{Story: st, Ref: si.Story, ID: si.ID, Stderr: io.Discard})
	if err != nil {
		return nil, si.Story, err
	}
	return d, si.Story, nil
}

// Continue takes one input in the session ref names and reports the
// turn. a names the caller for the session's trace (its zero value writes
// no record): the intent update carries the record, written before the
// turn.
func (s *Sessions) Continue(ctx context.Context, ref string, in driver.Input, a driver.Audit) (*driver.Frame, error) {
	d, sref, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out, err := d.TakeAudited(ctx, in, auditOf(a))
	if ie, ok := errors.AsType[*driver.InputError](err); ok {
		return nil, driver.Exit(driver.ExitRejected, ie)
	}
	if err != nil {
		return nil, driver.Exit(driver.CodeOf(err), err)
	}
	return s.frame(ctx, d, sref, keyOf(ref), out, out.Outcome)
}

// Inspect reports where the session ref names stands; no turn is taken.
// a names the caller for the session's trace (its zero value writes no
// record): a running session is live, so, as a live local session's
// inspect is, the call is written (cluster.AuditUpdate).
func (s *Sessions) Inspect(ctx context.Context, ref string, a driver.Audit) (*driver.Frame, error) {
	return s.report(ctx, ref, "status", a)
}

// Resume reattaches to the session ref names (waiting for a turn that
// runs) and reports it with the outcome "resumed", as picking up a local
// session does; nothing is held: the workflow is the live session. a is
// written into the trace as Inspect writes it.
func (s *Sessions) Resume(ctx context.Context, ref string, a driver.Audit) (*driver.Frame, error) {
	return s.report(ctx, ref, "resumed", a)
}

func (s *Sessions) report(ctx context.Context, ref, outcome string, a driver.Audit) (*driver.Frame, error) {
	d, sref, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := d.audit(ctx, auditOf(a)); err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	return s.frame(ctx, d, sref, keyOf(ref), nil, outcome)
}

// auditOf is a as the cluster carries it; nil when it names no tool.
func auditOf(a driver.Audit) *cluster.Audit {
	if a.Tool == "" {
		return nil
	}
	return &cluster.Audit{Surface: a.Surface, Tool: a.Tool, Client: a.Client}
}

// frame is the session's frame after out (nil: none taken).
func (s *Sessions) frame(ctx context.Context, d *Driver, ref cluster.StoryRef, key string, out *orchestrator.Outcome, outcome string) (*driver.Frame, error) {
	st, err := d.Status(ctx)
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	m := session.Meta{ID: d.ID(), Key: key, AppID: d.Story().App.ID, Story: ref.Path, StoryHash: ref.Hash}
	f := driver.NewFrame(m, st, out, outcome, nil)
	f.Mask(secret.New(d.Story().Secrets))
	return f, nil
}

// Trace is the session's JSONL trace: its header, then every run's events.
func (s *Sessions) Trace(ctx context.Context, ref string) ([]byte, error) {
	b, err := s.Client.TraceJSONL(ctx, ref)
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	return b, nil
}

// List lists the cluster's sessions, newest first.
func (s *Sessions) List(ctx context.Context) ([]cluster.SessionInfo, error) {
	all, err := s.Client.List(ctx)
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	return all, nil
}

// Fork starts a new session from where the running session ref stood
// after turn *at (nil: its current turn; an earlier turn is found by
// replaying the session's trace through its story bundle,
// cluster.Client.Fork), on the story bundle it runs. A turn the session
// has not finished is a usage error. id names the fork ("" generates
// one). The old session is left as it is.
func (s *Sessions) Fork(ctx context.Context, ref string, at *int64, id string) (*cluster.SessionInfo, error) {
	if id == "" {
		id = driver.NewID()
	}
	req := cluster.ForkRequest{Ref: ref, ID: id, AtTurn: at, Stories: s.Stories}
	fi, err := s.Client.Fork(ctx, req)
	if _, ok := errors.AsType[*cluster.TurnError](err); ok {
		return nil, driver.Exit(driver.ExitUsage, err)
	}
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, err)
	}
	return fi, nil
}

// Delete deletes the session ref names: its workflow (a running one is
// terminated) and its history.
func (s *Sessions) Delete(ctx context.Context, ref string) error {
	if err := s.Client.Delete(ctx, ref); err != nil {
		return driver.Exit(driver.ExitFailure, err)
	}
	return nil
}

// Prune deletes the sessions whose last activity (a closed session's
// close, a running one's last turn: cluster.SessionInfo.LastActivity) is
// older than olderThan before now; dry deletes nothing.
func (s *Sessions) Prune(ctx context.Context, olderThan time.Duration, now time.Time, dry bool) (cluster.PruneResult, error) {
	res, err := s.Client.Prune(ctx, now.Add(-olderThan), dry)
	if err != nil {
		return res, driver.Exit(driver.ExitFailure, err)
	}
	return res, nil
}

func (s *Sessions) stderr() io.Writer {
	if s.Stderr == nil {
		return io.Discard
	}
	return s.Stderr
}

// keyOf is ref when it is a key ("" for an id).
func keyOf(ref string) string {
	if session.IsKey(ref) {
		return ref
	}
	return ""
}

// attached is a session reattached to by Attach.
type attached struct {
	*Driver
	svc *Sessions
	key string
}

func (a *attached) Key() string { return a.key }

func (a *attached) Trace(ctx context.Context) ([]byte, error) { return a.svc.Trace(ctx, a.id) }

// Attach reattaches to the running session ref names, for a caller that
// takes its turns one by one (the Go API's Resume): Begin reports where
// it stands.
func (s *Sessions) Attach(ctx context.Context, ref string) (driver.Attached, error) {
	d, _, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &attached{Driver: d, svc: s, key: keyOf(ref)}, nil
}
