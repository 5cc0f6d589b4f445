// Package remote is the driver of a session that is a workflow on a
// Temporal cluster (internal/run/cluster): the same driver.Driver a local
// session has, so the console, the prompt and the session commands drive
// it unchanged. It is a package of its own so that what needs no cluster
// (the Go API, local runs) does not link the Temporal SDK.
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// ClusterSession is what the driver needs of the cluster client
// (cluster.Client has it; tests answer it from a local session).
type ClusterSession interface {
	Intent(ctx context.Context, id string, req cluster.IntentRequest) (*cluster.TurnResult, error)
	Status(ctx context.Context, id string) (*cluster.SessionStatus, error)
	TraceJSONL(ctx context.Context, id string) ([]byte, error)
	Audit(ctx context.Context, id string, a cluster.Audit) error
}

// Request says which session on a cluster a run is: a new one of
// the story, or (ID of a running one) a reattach.
type Request struct {
	Story *story.Story
	// Ref names the story as the workers find it.
	Ref cluster.StoryRef
	// ID of a running session reattaches to it; of no session, names the
	// new one; "" generates one.
	ID      string
	World   map[string]any
	Root    string
	Routing orchestrator.RoutingConfig
	// Stderr receives what the driver tells the person running it.
	Stderr io.Writer
	// Audit is the record of the call that starts a new session, written
	// into its trace after turn 0; nil writes none.
	Audit *cluster.Audit
}

// Driver is a session that is a workflow on a Temporal cluster: every
// input is an update, what it prints is the local run's.
type Driver struct {
	c  ClusterSession
	id string
	st *story.Story
	// state and world are the session's after the last turn.
	state string
	world map[string]any
	done  bool
	// first is Begin's outcome: turn 0's, or where a reattach found the
	// session.
	first *orchestrator.Outcome
	// skip is how many scripted inputs a reattached session already took.
	skip, skipped int
	inputs        map[int64]string // the session's turn inputs, read at the first skip

	parser      *runtime.Runtime
	parserState string
}

// Open starts the session of r on the cluster, or reattaches to
// the running session r.ID, and returns its driver.
func Open(ctx context.Context, c *cluster.Client, r Request) (*Driver, error) {
	id, reattach, err := clusterTarget(ctx, c, r)
	if err != nil {
		return nil, err
	}
	stderr := r.Stderr
	if !reattach {
		in := cluster.SessionInput{Story: r.Ref, SessionID: id, World: cluster.Value{V: r.World}, Root: r.Root, Audit: r.Audit}
		if r.Routing != (orchestrator.RoutingConfig{}) {
			in.Routing = &r.Routing
		}
		if err := c.Start(ctx, in, r.Story.App.ID); err != nil {
			return nil, driver.Exit(driver.ExitFailure, fmt.Errorf("kitsoki: %w", err))
		}
		fmt.Fprintf(stderr, "kitsoki: session %s on %s (namespace %s, task queue %s)\n", id, c.HostPort(), c.Namespace(), c.TaskQueue())
	}
	status, err := c.Attach(ctx, id)
	if ce, ok := errors.AsType[*cluster.ClosedError](err); ok && !reattach && ce.Info.Status == "completed" {
		// It ended at its start (a terminal root): a worker answers the
		// query of the closed workflow, turn 0's outcome included.
		status, err = c.Status(ctx, id)
	}
	if err != nil {
		return nil, driver.Exit(driver.ExitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	if reattach && r.Routing != (orchestrator.RoutingConfig{}) && !sameRouting(r.Routing, status.Routing) {
		return nil, driver.Exit(driver.ExitUsage, fmt.Errorf("session %s routes free text with %s, as it was started: the routing flags set how a new session routes; give the session's or none to reattach, or start a new session", id, routingFlagsText(status.Routing)))
	}
	d := New(c, id, r.Story, status)
	switch {
	case reattach:
		fmt.Fprintf(stderr, "kitsoki: reattached to session %s after turn %d in state %q\n", id, status.Turn, status.State)
		d.first = &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: status.State, State: status.State,
			View: status.View, Done: status.Done, Exit: status.Exit}
		if status.ViewError != "" {
			d.first = &orchestrator.Outcome{Outcome: orchestrator.OutcomeError, State: status.State, Err: errors.New(status.ViewError)}
		}
		d.skip = int(status.Turn)
	case status.Last != nil:
		d.first = status.Last.Orchestrator()
	}
	d.done = d.first.Done
	return d, nil
}

// clusterTarget decides between a new session and a reattach to r.ID.
func clusterTarget(ctx context.Context, c *cluster.Client, r Request) (id string, reattach bool, err error) {
	if r.ID == "" {
		return driver.NewID(), false, nil
	}
	si, err := c.Describe(ctx, r.ID)
	switch {
	case errors.Is(err, cluster.ErrNoSession): // a new session of that id
		return r.ID, false, nil
	case err != nil:
		return "", false, driver.Exit(driver.ExitFailure, fmt.Errorf("kitsoki: %w", err))
	case !si.Running():
		return "", false, driver.Exit(driver.ExitFailure, fmt.Errorf("kitsoki: %w", &cluster.ClosedError{Info: si}))
	}
	if si.Story.Path != r.Ref.Path {
		return "", false, driver.Exit(driver.ExitFailure, fmt.Errorf("kitsoki: session %s runs %s (in the stories directory), not %s: reattach with that story", r.ID, si.Story.Path, r.Ref.Path))
	}
	if len(r.World) > 0 || r.Root != "" {
		return "", false, driver.Exit(driver.ExitUsage, fmt.Errorf("session %s is running: --world and --root set how a new session starts; drop them to reattach", r.ID))
	}
	if si.Story.Hash != r.Ref.Hash {
		fmt.Fprintf(r.Stderr, "warning: session %s runs %s as its content hash %s; the local file is now %s (the workers run the session's)\n", r.ID, r.Ref.Path, si.Story.Hash, r.Ref.Hash)
	}
	return r.ID, true, nil
}

// New is the driver of the running session id whose status is
// status; Begin reports where it stands.
func New(c ClusterSession, id string, st *story.Story, status *cluster.SessionStatus) *Driver {
	return &Driver{c: c, id: id, st: st, state: status.State, world: status.World.Map(), done: status.Done,
		first: &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, State: status.State, View: status.View, Done: status.Done, Exit: status.Exit}}
}

func (d *Driver) ID() string          { return d.id }
func (d *Driver) Story() *story.Story { return d.st }

// Done reports whether the session reached a terminal state.
func (d *Driver) Done() bool { return d.done }

// Begin reports where the session stands: it started (or was attached
// to) when the driver was opened.
func (d *Driver) Begin(context.Context) (*orchestrator.Outcome, error) { return d.first, nil }

// parse is a session of the story, never started, restored to the remote
// session's state: it parses input lines and tells free text from intents
// exactly as the local run's session would in that state.
func (d *Driver) parse() (*orchestrator.Session, error) {
	if d.parser != nil && d.parserState == d.state {
		return d.parser.Session(), nil
	}
	d.closeParser()
	rt, err := runtime.Open(d.st, runtime.Config{Session: &runtime.Session{ID: d.id}})
	if err != nil {
		return nil, err
	}
	if err := rt.Session().Restore(d.state, d.world, 0); err != nil {
		rt.Close()
		return nil, err
	}
	d.parser, d.parserState = rt, d.state
	return rt.Session(), nil
}

func (d *Driver) closeParser() {
	if d.parser != nil {
		d.parser.Close()
		d.parser = nil
	}
}

// Take sends one input as an intent update: free text as
// IntentRequest.Input alone, a typed line parsed into intent and slots
// (with the line as its input text).
func (d *Driver) Take(ctx context.Context, in driver.Input) (*orchestrator.Outcome, error) {
	return d.TakeAudited(ctx, in, nil)
}

// TakeAudited is Take with the record of the call that sent the input
// (nil: none): the update carries it, and the workflow writes it into the
// trace before the turn. An input the update's validator refuses enters
// no history, so its record is then sent on its own (AuditUpdate), as a
// local session writes the record of a call it rejects.
func (d *Driver) TakeAudited(ctx context.Context, in driver.Input, a *cluster.Audit) (*orchestrator.Outcome, error) {
	in, err := in.Recordable()
	if err != nil {
		if aerr := d.audit(ctx, a); aerr != nil {
			return nil, aerr
		}
		return nil, err
	}
	req := cluster.IntentRequest{Input: in.Text}
	switch in.Kind {
	case driver.KindIntent:
		req = cluster.IntentRequest{Intent: in.Intent, Slots: cluster.Value{V: in.Slots}}
	case driver.KindRaw, driver.KindLine:
		sess, err := d.parse()
		if err != nil {
			return nil, err
		}
		if in.Kind == driver.KindLine || !sess.IsFreeText(in.Text) {
			intent, slots, err := sess.ParseInput(in.Text)
			if err != nil {
				if aerr := d.audit(ctx, a); aerr != nil {
					return nil, aerr
				}
				return nil, &driver.InputError{Err: err}
			}
			req.Intent, req.Slots = intent, cluster.Value{V: slots}
		}
	}
	req.Audit = a
	tr, err := d.c.Intent(ctx, d.id, req)
	if _, ok := errors.AsType[*cluster.RejectedError](err); ok {
		if aerr := d.audit(ctx, a); aerr != nil {
			return nil, aerr
		}
	}
	return d.result(ctx, tr, err)
}

// result turns a turn taken on the cluster into the outcome a local turn
// has: a rejection the update's validator gave is a rejected outcome.
func (d *Driver) result(ctx context.Context, tr *cluster.TurnResult, err error) (*orchestrator.Outcome, error) {
	if rej, ok := errors.AsType[*cluster.RejectedError](err); ok {
		return &orchestrator.Outcome{Outcome: orchestrator.OutcomeRejected, State: d.state, Rejection: rej.Rejection}, nil
	}
	if err != nil {
		return nil, err
	}
	d.state, d.done = tr.State, tr.Done
	if tr.Outcome != orchestrator.OutcomeRejected {
		if st, err := d.c.Status(ctx, d.id); err == nil {
			d.world = st.World.Map()
		}
	}
	return tr.Orchestrator(), nil
}

// audit sends a's record on its own (nil sends nothing).
func (d *Driver) audit(ctx context.Context, a *cluster.Audit) error {
	if a == nil {
		return nil
	}
	return d.c.Audit(ctx, d.id, *a)
}

// Back sends a back update.
func (d *Driver) Back(ctx context.Context) (*orchestrator.Outcome, error) {
	tr, err := d.c.Intent(ctx, d.id, cluster.IntentRequest{Back: true})
	if errors.Is(err, orchestrator.ErrNoHistory) {
		return nil, err
	}
	return d.result(ctx, tr, err)
}

// Settle has nothing to wait for: a session on the cluster runs no
// background jobs (the workflow refuses them at its start).
func (d *Driver) Settle(context.Context) ([]*orchestrator.Outcome, error) { return nil, nil }

// Status reads the session's status query; the intents' declarations
// and the typed view come from this process's copy of the story, restored
// to the session's state and world.
func (d *Driver) Status(ctx context.Context) (*driver.Status, error) {
	st, err := d.c.Status(ctx, d.id)
	if err != nil {
		return nil, err
	}
	d.state, d.world, d.done = st.State, st.World.Map(), st.Done
	sess, err := d.parse()
	if err != nil {
		return nil, err
	}
	out := &driver.Status{ID: d.id, State: st.State, Turn: st.Turn, World: st.World.Map(), View: st.View, Done: st.Done, Exit: st.Exit,
		Intents: driver.Intents(st.Allowed, sess.IntentDef)}
	if s := d.st.States[st.State]; s != nil {
		out.Description = s.Description
	}
	if st.ViewError != "" {
		out.ViewErr = errors.New(st.ViewError)
	} else {
		out.ViewDoc, out.ViewErr = sess.ViewDoc()
	}
	// The parser is kept per state: bring its world up to date for the
	// room's footer and location indicator.
	if err := sess.Restore(st.State, st.World.Map(), st.Turn); err == nil {
		out.Room = driver.RoomOf(sess)
	}
	return out, nil
}

// Skip skips a scripted line a reattached session already took; a line
// that differs from the session's input of that turn stops the run (exit
// 2), as a local resume does.
func (d *Driver) Skip(ctx context.Context, line string) (bool, error) {
	if d.skipped >= d.skip {
		return false, nil
	}
	if d.inputs == nil {
		in, err := d.turnInputs(ctx)
		if err != nil {
			return true, err
		}
		d.inputs = in
	}
	d.skipped++
	if in, ok := d.inputs[int64(d.skipped)]; ok && in != line {
		return true, driver.Exit(driver.ExitUsage, fmt.Errorf("reattaching to session %s: input %d is %q, but the session's turn %d took %q; give the same inputs as the run that started it (those it took are skipped), or start a new session",
			d.id, d.skipped, line, d.skipped, in))
	}
	return true, nil
}

// turnInputs reads the input text of each turn from the session's trace.
func (d *Driver) turnInputs(ctx context.Context) (map[int64]string, error) {
	b, err := d.c.TraceJSONL(ctx, d.id)
	if err != nil {
		return nil, err
	}
	_, evs, err := trace.ReadAll(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("session %s: its trace does not read: %w", d.id, err)
	}
	out := map[int64]string{}
	for i := range evs {
		if evs[i].Kind == trace.KindTurnInput {
			s, _ := evs[i].Payload["input"].(string)
			out[evs[i].Turn] = s
		}
	}
	return out, nil
}

// Close releases the parser; the session goes on on the cluster.
func (d *Driver) Close() error {
	d.closeParser()
	return nil
}

// sameRouting reports whether the routing flags of a reattach are the
// ones the session started with (nil: none).
func sameRouting(a orchestrator.RoutingConfig, b *orchestrator.RoutingConfig) bool {
	if b == nil {
		b = &orchestrator.RoutingConfig{}
	}
	eq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Router == b.Router && eq(a.Semantic, b.Semantic) && eqf(a.MinConfidence, b.MinConfidence)
}

// routingFlagsText is a session's routing as the flags that set it.
func routingFlagsText(r *orchestrator.RoutingConfig) string {
	var parts []string
	if r != nil && r.Semantic != nil {
		parts = append(parts, fmt.Sprintf("--semantic-routing=%t", *r.Semantic))
	}
	if r != nil && r.Router != "" {
		parts = append(parts, "--router "+r.Router)
	}
	if r != nil && r.MinConfidence != nil {
		parts = append(parts, fmt.Sprintf("--min-confidence %v", *r.MinConfidence))
	}
	if len(parts) == 0 {
		return "the story's routing (no routing flags)"
	}
	return strings.Join(parts, " ")
}
