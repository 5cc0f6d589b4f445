package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/tui"
)

// localOnlyRunFlags are kitsoki run's flags that have no meaning for a
// session on the cluster, with what to do instead.
var localOnlyRunFlags = []struct{ name, instead string }{
	{"trace", "the trace is in the session's workflow: kitsoki session trace ID --temporal HOST:PORT -o FILE writes it"},
	{"trace-sync", "the session's history is Temporal's"},
	{"durability", "the session's history is Temporal's"},
	{"continue", "reattach with --session ID (kitsoki session list --temporal HOST:PORT shows the sessions)"},
	{"fork", "start a new session"},
	{"resume-side-effects", "a call lost with its worker is the worker's to re-issue"},
	{"sessions-dir", "the sessions are on the cluster"},
	{"cassette", "give it to the workers: kitsoki worker --cassette FILE"},
	{"cassette-strict", "the workers replay cassettes"},
	{"record", "the workers run the agents"},
	{"http-cassette", "the workers run host.starlark.run"},
	{"agent-timeout", "give it to the workers: kitsoki worker --agent-timeout D"},
	{"tool-provider", "the workers make the calls"},
	{"autopilot", "agents in a Temporal session are not offered the operator tool"},
	{"control-mcp", "plugins run on the workers"},
	{"strict-pins", "the workers apply the story's pins"},
	{"mode", "a Temporal session runs one_shot"},
	{"otlp", "export from the workers' traces"},
	{"otlp-content", "export from the workers' traces"},
}

// runOnCluster is kitsoki run --temporal: the session is a workflow on
// the cluster; this process starts it (or reattaches to it with
// --session ID) and drives it as a local run is driven, printing the same
// says, views and errors and exiting with the same codes.
func runOnCluster(cmd *cobra.Command, g *globals, o *runOpts, path string) (err error) {
	for _, f := range localOnlyRunFlags {
		if fl := cmd.Flags().Lookup(f.name); fl != nil && fl.Changed {
			return exitWith(exitUsage, fmt.Errorf("--%s does not apply with --temporal: %s", f.name, f.instead))
		}
	}
	if o.intents != "" && len(o.say) > 0 {
		return exitWith(exitUsage, errors.New("--say and --intents cannot be combined: give the turns as one of them (a free-text line on stdin works too)"))
	}
	st, err := story.Load(path, g.storyOpts()...)
	if err != nil {
		return exitWith(exitLoad, err)
	}
	defer st.Close()
	defer func() { err = maskedExit(st.Secrets, err) }()
	stdout, stderr := redacting(cmd.OutOrStdout(), st.Secrets), redacting(cmd.ErrOrStderr(), st.Secrets)
	logger := g.logger(stderr)
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.String())
	}
	world, err := parseWorldFlags(st, o.world)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	rc, err := o.routing.config(cmd, st)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	// --stories names the workers' stories directory: the session names
	// its story by its path there. Without it the story travels with the
	// session, as a bundle in the blob store the workers run.
	var ref cluster.StoryRef
	if cmd.Flags().Changed("stories") {
		if ref, err = cluster.PathRef(o.tf.stories, story.RootFile(path), st); err != nil { // a story directory: its app.yaml
			return exitWith(exitUsage, err)
		}
	}
	if o.session != "" {
		if err := session.CheckID(o.session); err != nil {
			return exitWith(exitUsage, err)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := o.tf.dial(ctx, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	if ref.Path == "" {
		if ref, err = cluster.PackStory(path, st, o.tf.blobStore(), o.tf.stories, g.storyOpts()...); err != nil {
			return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
		}
	}

	id := o.session
	reattach := false
	if id != "" {
		si, err := c.Describe(ctx, id)
		switch {
		case errors.Is(err, cluster.ErrNoSession): // a new session of that id
		case err != nil:
			return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
		case !si.Running():
			return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", &cluster.ClosedError{Info: si}))
		default:
			if si.Story.Path != ref.Path {
				return exitWith(exitFailure, fmt.Errorf("kitsoki: session %s runs %s (in the stories directory), not %s: reattach with that story", id, si.Story.Path, ref.Path))
			}
			if len(o.world) > 0 || o.root != "" {
				return exitWith(exitUsage, fmt.Errorf("session %s is running: --world and --root set how a new session starts; drop them to reattach", id))
			}
			if si.Story.Hash != ref.Hash {
				fmt.Fprintf(stderr, "warning: session %s runs %s as its content hash %s; the local file is now %s (the workers run the session's)\n", id, ref.Path, si.Story.Hash, ref.Hash)
			}
			reattach = true
		}
	} else {
		id = newSessionID()
	}
	if !reattach {
		in := cluster.SessionInput{Story: ref, SessionID: id, World: cluster.Value{V: world}, Root: o.root}
		if rc != (orchestrator.RoutingConfig{}) {
			in.Routing = &rc
		}
		if err := c.Start(ctx, in, st.App.ID); err != nil {
			return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
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
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	if reattach && rc != (orchestrator.RoutingConfig{}) && !sameRouting(rc, status.Routing) {
		return exitWith(exitUsage, fmt.Errorf("session %s routes free text with %s, as it was started: the routing flags set how a new session routes; give the session's or none to reattach, or start a new session", id, routingFlagsText(status.Routing)))
	}
	d := &remoteDriver{c: c, id: id, st: st, r: &runner{out: stdout, errw: stderr}, state: status.State, world: status.World.Map()}
	defer d.closeParser()
	var first *orchestrator.Outcome
	if reattach {
		fmt.Fprintf(stderr, "kitsoki: reattached to session %s after turn %d in state %q\n", id, status.Turn, status.State)
		first = &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: status.State, State: status.State,
			View: status.View, Done: status.Done, Exit: status.Exit}
		if status.ViewError != "" {
			first = &orchestrator.Outcome{Outcome: orchestrator.OutcomeError, State: status.State, Err: errors.New(status.ViewError)}
		}
		d.skip = int(status.Turn)
	} else if status.Last != nil {
		first = status.Last.Orchestrator()
	} else {
		first = &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, State: status.State, View: status.View, Done: status.Done, Exit: status.Exit}
	}
	d.done = first.Done
	if code, stopNow := d.r.report(first); stopNow {
		return exitCode(code)
	}
	var code int
	switch {
	case o.intents != "":
		code = d.scripted(ctx, strings.NewReader(strings.ReplaceAll(o.intents, ",", "\n")))
	case len(o.say) > 0:
		code = d.said(ctx, o.say)
	case isTerminal(cmd.InOrStdin()):
		code = d.interactive(ctx, newLines(cmd.InOrStdin()))
	default:
		code = d.scripted(ctx, cmd.InOrStdin())
	}
	if !d.done && code != exitOK {
		fmt.Fprintf(stderr, "kitsoki: session %s goes on on the cluster; reattach with kitsoki run %s --temporal %s --session %s\n", id, path, c.HostPort(), id)
	}
	return exitCode(code)
}

// clusterSession is what the driver needs of the cluster client.
type clusterSession interface {
	Intent(ctx context.Context, id string, req cluster.IntentRequest) (*cluster.TurnResult, error)
	Status(ctx context.Context, id string) (*cluster.SessionStatus, error)
	TraceJSONL(ctx context.Context, id string) ([]byte, error)
}

// remoteDriver drives a session on the cluster: it reads lines as a local
// run does, sends each as an intent update and prints its result with the
// local run's report.
type remoteDriver struct {
	c  clusterSession
	id string
	st *story.Story
	r  *runner // prints outcomes (no session of its own)
	// state and world are the session's after the last turn.
	state string
	world map[string]any
	done  bool
	// skip is how many scripted inputs a reattached session already took.
	skip, skipped int
	inputs        map[int64]string // the session's turn inputs, read at the first skip

	parser      *runtime.Runtime
	parserState string
}

// parse is a session of the story, never started, restored to the remote
// session's state: it parses input lines and tells free text from intents
// exactly as the local run's session would in that state.
func (d *remoteDriver) parse() (*orchestrator.Session, error) {
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

func (d *remoteDriver) closeParser() {
	if d.parser != nil {
		d.parser.Close()
		d.parser = nil
	}
}

// send sends one line: free text as IntentRequest.Input alone, a typed
// line parsed into intent and slots (with the line as its input text).
func (d *remoteDriver) send(ctx context.Context, line string, free bool) (int, bool) {
	r := d.r
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(r.errw, "kitsoki: interrupted")
		return exitFailure, true
	}
	req := cluster.IntentRequest{Input: line}
	if !free {
		sess, err := d.parse()
		if err != nil {
			fmt.Fprintln(r.errw, "kitsoki:", err)
			return exitFailure, true
		}
		if !sess.IsFreeText(line) {
			intent, slots, err := sess.ParseInput(line)
			if err != nil {
				fmt.Fprintln(r.errw, "kitsoki:", err)
				return exitRejected, true
			}
			req.Intent, req.Slots = intent, cluster.Value{V: slots}
		}
	}
	tr, err := d.c.Intent(ctx, d.id, req)
	return d.reported(ctx, tr, err)
}

// reported reports a turn taken on the cluster as a local turn is
// reported.
func (d *remoteDriver) reported(ctx context.Context, tr *cluster.TurnResult, err error) (int, bool) {
	r := d.r
	if rej, ok := errors.AsType[*cluster.RejectedError](err); ok {
		return r.report(&orchestrator.Outcome{Outcome: orchestrator.OutcomeRejected, State: d.state, Rejection: rej.Rejection})
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(r.errw, "kitsoki: interrupted")
		} else {
			fmt.Fprintln(r.errw, "kitsoki:", err)
		}
		return exitFailure, true
	}
	d.state, d.done = tr.State, tr.Done
	if tr.Outcome != orchestrator.OutcomeRejected {
		if st, err := d.c.Status(ctx, d.id); err == nil {
			d.world = st.World.Map()
		}
	}
	return r.report(tr.Orchestrator())
}

// skipInput skips a scripted line a reattached session already took; a
// line that differs from the session's input of that turn stops the run
// (exit 2), as a local resume does.
func (d *remoteDriver) skipInput(ctx context.Context, line string) (bool, int) {
	if d.skipped >= d.skip {
		return false, exitOK
	}
	if d.inputs == nil {
		in, err := d.turnInputs(ctx)
		if err != nil {
			fmt.Fprintln(d.r.errw, "kitsoki:", err)
			return true, exitFailure
		}
		d.inputs = in
	}
	d.skipped++
	if in, ok := d.inputs[int64(d.skipped)]; ok && in != line {
		fmt.Fprintf(d.r.errw, "kitsoki: reattaching to session %s: input %d is %q, but the session's turn %d took %q; give the same inputs as the run that started it (those it took are skipped), or start a new session\n",
			d.id, d.skipped, line, d.skipped, in)
		return true, exitUsage
	}
	return true, exitOK
}

// turnInputs reads the input text of each turn from the session's trace.
func (d *remoteDriver) turnInputs(ctx context.Context) (map[int64]string, error) {
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

// scripted runs the lines of in as scripted input (scriptLoop).
func (d *remoteDriver) scripted(ctx context.Context, in io.Reader) int { return scriptLoop(ctx, d, in) }

// said runs the --say texts (sayLoop).
func (d *remoteDriver) said(ctx context.Context, says []string) int { return sayLoop(ctx, d, says) }

// interactive is the prompt of a session on the cluster (promptLoop):
// the line protocol's commands that read the session (:intents, :state,
// :world) and :back (a back update), without the plugin commands, which
// need the session in this process.
func (d *remoteDriver) interactive(ctx context.Context, in *lines) int { return promptLoop(ctx, d, in) }

// The remoteDriver is the lineDriver of a session on the cluster.

func (d *remoteDriver) writers() (io.Writer, io.Writer) { return d.r.out, d.r.errw }

func (d *remoteDriver) turn(ctx context.Context, line string) (int, bool) {
	return d.send(ctx, line, false)
}

func (d *remoteDriver) say(ctx context.Context, text string) (int, bool) {
	return d.send(ctx, text, true)
}

// back sends a back update.
func (d *remoteDriver) back(ctx context.Context) (int, bool, error) {
	tr, err := d.c.Intent(ctx, d.id, cluster.IntentRequest{Back: true})
	if errors.Is(err, orchestrator.ErrNoHistory) {
		return exitOK, false, err
	}
	code, stop := d.reported(ctx, tr, err)
	return code, stop, nil
}

// readWorld reads the world from the session's status.
func (d *remoteDriver) readWorld(ctx context.Context) (map[string]any, error) {
	st, err := d.c.Status(ctx, d.id)
	if err != nil {
		return nil, err
	}
	return st.World.Map(), nil
}

func (d *remoteDriver) help() string {
	return promptHelp + "\n:quit      leave (the session goes on on the cluster)"
}

// command refuses every other colon command: those of a local run
// (plugins, :reload) need the session in this process; a word that is
// no command at all is refused as a local run refuses it.
func (d *remoteDriver) command(_ context.Context, line string) bool {
	if !strings.HasPrefix(line, ":") {
		return false
	}
	word := strings.Fields(line)[0]
	if !slices.Contains(promptCommands(), word) {
		fmt.Fprintln(d.r.errw, "kitsoki:", tui.UnknownCommand(word, []string{":help", ":intents", ":state", ":world", ":back", ":quit"}))
		return true
	}
	fmt.Fprintf(d.r.errw, "kitsoki: %s is not available in a session on the cluster (:help lists the commands)\n", word)
	return true
}

// settle has nothing to wait for: a session on the cluster runs no
// background jobs (the workflow refuses them at its start).
func (d *remoteDriver) settle(context.Context) (int, bool) { return exitOK, false }

func (d *remoteDriver) current() string { return d.state }

// reloadRequested: a session on the cluster takes no :reload.
func (d *remoteDriver) reloadRequested() bool { return false }

// describe prints the state and the intents it accepts, from the
// session's status.
func (d *remoteDriver) describe(ctx context.Context) {
	st, err := d.c.Status(ctx, d.id)
	if err != nil {
		fmt.Fprintln(d.r.errw, "kitsoki:", err)
		return
	}
	d.state = st.State
	sess, err := d.parse()
	if err != nil {
		fmt.Fprintln(d.r.errw, "kitsoki:", err)
		return
	}
	describeState(d.r.out, d.st, st.State, st.Allowed, sess.IntentDef)
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
