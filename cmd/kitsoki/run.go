package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/check/testrunner"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/profiles"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

type runOpts struct {
	// reload is set by a run that ends for a :reload: it starts again on
	// the same session. in is the terminal's lines, kept across reloads
	// (one goroutine reads the terminal).
	reload bool
	in     *driver.Lines
	// budget is the run's --max-cost budget, made by its first start and
	// kept across reloads, so a reload does not reset what was spent.
	budget *agent.Budget
	// switches are the live switches (:provider, :model, :effort) taken
	// so far, in order: a reloaded run takes them again.
	switches  [][2]string
	recording string // --recording: a Kitsoki recording answers free text
	otlp      otlpOpts
	trace     string
	traceSync string
	world     []string
	root      string
	mode      string
	intents   string
	session   string
	timeout   time.Duration
	cassette  string
	record    string
	// cassetteStrict refuses episodes recorded for another request.
	cassetteStrict bool
	// strictPins makes an unhonoured selection: pin a load error.
	strictPins bool
	// controlMCP serves the plugin controls on this loopback address.
	controlMCP string
	// autopilot and toolProviders shape the MCP tools agents get.
	autopilot     bool
	toolProviders []string
	// httpCassette serves host.starlark.run's HTTP (recorded with --record).
	httpCassette string
	// say are free-text lines to run instead of reading stdin (--say).
	say []string
	// promptOverlay shadows the story's prompt files (--prompt-overlay).
	promptOverlay string
	routing       routingFlags
	// noTUI keeps the line protocol on a terminal (--no-tui).
	noTUI bool
	// sf are the durable-session flags (session.go).
	sf sessionFlags
	// tf, with --temporal, runs the session on a Temporal cluster
	// (temporal_run.go).
	tf temporalFlags
	// af chooses the default agent and caps the run's cost (profiles.go).
	af agentFlags
}

func newRunCmd(g *globals) *cobra.Command {
	o := &runOpts{}
	cmd := &cobra.Command{
		Use:   "run <app.yaml>",
		Short: "Run a story: interactively on a terminal, scripted otherwise",
		Long: `Run a story.

On a terminal (stdin and stdout), kitsoki shows a terminal UI: the current
state and the intents it accepts, the view, line editing with history (kept
per story), Tab completion, a spinner while an agent works (Ctrl-C cancels
the call, a second Ctrl-C quits); ":help" lists the commands and keys, and
":quit" or Ctrl-D ends the session (exit 0) and says where the trace is.
--no-tui keeps a plain prompt that reads "intent key=value ..." lines.
Otherwise it reads one intent per line from stdin, or takes --intents.
A line that is not "intent key=value ..." is free text: it is routed to one
of the state's intents (exact match, synonyms and templates with
--semantic-routing, the state's default_intent, then the router agent);
--say runs free text instead of stdin.
Every run is a durable session: every step is written to its journal, a
JSONL trace (--trace, default <sessions dir>/<session>.jsonl; the sessions
dir is --sessions-dir, $KITSOKI_SESSIONS_DIR or .kitsoki/sessions in the
workspace). --continue resumes the story's latest unfinished session and
--session ID resumes that one (kitsoki session list shows them). With
--continue, --intents/--say replay the run from turn 1 (the inputs the
journal holds are checked and skipped, so the same command finishes a
stopped run); with --session ID they are new turns after the journal's
last; --resume-inputs=new|replay picks either, and the run names on stderr
the inputs it skips and the first it takes. A call failure that an on_error handles is
printed on stderr as one line ("agent error: … — on_error → <state>").
With --temporal HOST:PORT the session is a workflow on a Temporal cluster,
its turns and calls taken by kitsoki worker processes: this process starts
it (--session ID of a running one reattaches to it) and drives it as above,
with the same output and exit codes; see docs/temporal.md.

Exit codes:
  0  a terminal state (or an @exit:) was reached
  1  I/O or trace failure, or a flag value kitsoki refuses
  2  the story did not load, or the command line is wrong (unknown flag…)
  3  an intent was rejected (unknown intent, bad slots, no guard matched),
     or free text matched no intent confidently (NO_MATCH)
  4  an agent or host call failed and no on_error handled it (the router's
     too), or a --cassette replay missed (no episode matched a call)
  5  a turn aborted on an expression or effect fault
  6  the input ended before a terminal state`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for {
				o.reload = false
				if err := runStory(cmd, g, o, args[0]); err != nil || !o.reload {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file, the session's journal (default <sessions dir>/<session>.jsonl)")
	f.StringVar(&o.traceSync, "trace-sync", "turn", "when the trace is fsynced: turn (group commit) or event")
	f.StringArrayVar(&o.world, "world", nil, "set a world value at start, key=value, typed by the world declaration (repeatable)")
	f.StringVar(&o.root, "root", "", "start in this state instead of the story's root")
	f.StringVar(&o.mode, "mode", "", "execution mode: one_shot (default; emit_intent chains run to rest) or staged (they stop at decision gates)")
	f.StringVar(&o.intents, "intents", "", "comma-separated intents to run instead of reading stdin, e.g. 'open,approve by=ann'")
	f.StringArrayVar(&o.say, "say", nil, "free text to route and run instead of reading stdin, e.g. 'show me the forecast for Tokyo' (repeatable; not with --intents)")
	addRoutingFlags(cmd, &o.routing)
	f.BoolVar(&o.noTUI, "no-tui", false, "on a terminal, read lines at a plain prompt instead of showing the terminal UI")
	addOTLPFlags(f, &o.otlp)
	f.StringVar(&o.session, "session", "", "session id: resumes that session when the sessions dir holds it, else names the new one (default: generated)")
	addSessionFlags(cmd, &o.sf)
	f.DurationVar(&o.timeout, "agent-timeout", host.DefaultTimeout, "hard deadline of an agent call that sets no with.timeout")
	f.BoolVar(&o.autopilot, "autopilot", false, "run unattended: agents are not offered the tool that asks the operator")
	f.StringArrayVar(&o.toolProviders, "tool-provider", nil, "attach a tool provider's MCP tools to every agent call, e.g. story-files (repeatable)")
	f.StringVar(&o.cassette, "cassette", "", "replay this cassette (.yaml or .yaml.zst) in place of the declared agents")
	f.StringVar(&o.recording, "recording", "", "answer free text from this Kitsoki recording (kind: recording: state, input → intent) in place of the router agent; an input it lacks is UNKNOWN_INTENT")
	f.BoolVar(&o.cassetteStrict, "cassette-strict", false, "with --cassette: fail a call whose episode was recorded for a different request (default: answer it and warn)")
	f.StringVar(&o.record, "record", "", "run the real agents and write every agent exchange and host call to this cassette")
	f.StringVar(&o.httpCassette, "http-cassette", "", "serve host.starlark.run's HTTP from this cassette; with --record, fetch and record what it misses")
	f.BoolVar(&o.strictPins, "strict-pins", false, "fail to load when a selection: pin's evidence is missing, stale or failing")
	f.StringVar(&o.promptOverlay, "prompt-overlay", "", "a directory whose prompt files shadow the story's of the same name (over the story's prompts.overlay)")
	addWorkspaceFlag(cmd, g)
	f.StringVar(&o.controlMCP, "control-mcp", "", "serve MCP plugin controls (configuration surface) on this loopback address, e.g. 127.0.0.1:0")
	addTemporalFlags(cmd, &o.tf, true)
	addAgentFlags(cmd.Flags(), &o.af)
	return cmd
}

func runStory(cmd *cobra.Command, g *globals, o *runOpts, path string) (err error) {
	if o.tf.addr != "" {
		return runOnCluster(cmd, g, o, path)
	}
	if err := o.tf.refuseWithout(cmd); err != nil {
		return err
	}
	sopts := o.storyOptions(g)
	st, agents, budget, err := o.loadStory(g, path, sopts)
	if err != nil {
		return err
	}
	defer func() { err = maskedExit(st.Secrets, err) }()
	// Nothing the run prints, logs included (a plugin's stderr is logged),
	// shows a secret resolved from ${VAR}.
	tw := newTUIWiring(cmd.InOrStdin(), cmd.OutOrStdout(), o) // nil: the line protocol
	stdout, stderr := redacting(tw.stdout(cmd.OutOrStdout()), st.Secrets), redacting(tw.stderr(cmd.ErrOrStderr()), st.Secrets)
	logger := g.logger(stderr)
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.String())
	}
	tr, err := o.checkFlags(g)
	if err != nil {
		return err
	}
	world, err := parseWorldFlags(st, o.world)
	if err != nil {
		return exitWith(exitUsage, err) // malformed, undeclared or mistyped --world value
	}
	plan, err := o.sessionPlan(cmd, st, world, stderr)
	if err != nil {
		return err
	}
	defer plan.Release() // the session's writer lock, when no session opened
	as, err := setupAgents(o, st)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer as.finish(stderr)
	session, err := o.sessionConfig(cmd, st, world)
	if err != nil {
		return err
	}
	in, interactive := o.operator(cmd, tw, session, stdout)
	cfg := runtime.Config{
		Logger:      logger,
		Trace:       tr,
		Agents:      runtime.Agents{Live: true},
		Timeout:     o.timeout,
		StrictPins:  o.strictPins,
		PinWarning:  pinWarnings(stderr),
		Session:     session,
		Tools:       runtime.Tools{Plugins: true, Providers: o.toolProviders, Autopilot: o.autopilot},
		Out:         stdout,
		SessionsDir: plan.Store().Dir,
		Selection:   agents.Selection,
		Budget:      budget,
	}
	if tw != nil {
		cfg.OnDispatch = tw.dispatched
		cfg.Trace.Observer = tw.observer(nil)
	}
	as.configure(&cfg)
	hc, err := openHTTPCassette(o, st, &cfg)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer hc.save(stderr, &err)
	otlp, err := o.otlp.open(cmd.Context(), st, plan.ID(), path, &cfg, logger)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer otlp.close(cmd.Context(), stderr) // after the session's Close: every event is in
	d, err := driver.OpenLocal(st, cfg, plan)
	if pe := (*runtime.PinsError)(nil); errors.As(err, &pe) {
		return exitWith(exitLoad, err)
	}
	if err != nil {
		return exitWith(driver.CodeOf(err), err)
	}
	defer d.Close() // saves the index entry, closes the runtime, releases the lock
	plugins, err := startPlugins(st, d.Runtime().Plugins(), o.controlMCP, logger, stderr)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer plugins.Close()
	plugins.profiles = agents.Apply
	switches := &switchCommands{plan: agents, record: d.Runtime().Record, taken: &o.switches}
	switches.retake(stderr)

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	con := &driver.Console{D: d, Out: stdout, Err: stderr, Extra: localCommands(plugins, switches), Replay: as.replayCheck}
	con.Reload = reloader(tw != nil || interactive, path, sopts, st, plan, o.reloadFlags(g))
	defer o.reloaded(con, plan)
	if tw != nil {
		return exitCode(tw.run(ctx, con, st, path, plan.Trace(), stderr))
	}
	return exitCode(o.drive(ctx, cmd, con, in, interactive))
}

// sessionPlan offers, on a terminal, to resume the story's unfinished
// session, then decides the run's session (sessionFlags.plan).
func (o *runOpts) sessionPlan(cmd *cobra.Command, st *story.Story, world map[string]any, stderr io.Writer) (*driver.Plan, error) {
	if err := o.sf.offerResume(o, st, cmd.InOrStdin(), stderr); err != nil {
		return nil, exitWith(exitFailure, err)
	}
	return o.sf.plan(cmd.Context(), o, st, world, stderr)
}

// reloader lets a person at the terminal (person) :reload the story the
// session runs, flags checking the run's command line against the new
// story; nil for any other run.
func reloader(person bool, path string, opts []story.Option, st *story.Story, plan *driver.Plan, flags func(*story.Story) error) *driver.Reloader {
	if !person {
		return nil
	}
	return &driver.Reloader{Path: path, Opts: opts, Current: st, Session: plan.ID(), Journal: plan.Trace(), Flags: flags}
}

// reloadFlags checks the run's command line against a reloaded story as
// the restarted run will take it: its --world values and its --profile
// or --agent. (--world sets how a new session starts; the reloaded run
// resumes the session, so its world is the journal's, not the flags'.)
func (o *runOpts) reloadFlags(g *globals) func(*story.Story) error {
	return func(next *story.Story) error {
		if _, err := parseWorldFlags(next, o.world); err != nil {
			return err
		}
		_, err := profiles.New(g.project, next, profiles.Request{Profile: o.af.profile, Agent: o.af.agent})
		return err
	}
}

// reloaded notes a run that ended for a :reload: the run starts again
// and resumes this session, as --session ID resumes it.
func (o *runOpts) reloaded(con *driver.Console, plan *driver.Plan) {
	o.reload = con.Reloading
	if con.Reloading {
		o.session, o.sf.resumeLatest = plan.ID(), false
	}
}

// storyOptions are the run's options of the loader: the handlers a
// cassette answers, a prompt overlay.
func (o *runOpts) storyOptions(g *globals) []story.Option {
	sopts := g.storyOpts()
	if o.cassette != "" { // the handlers the cassette answers are provided
		sopts = append(sopts, story.WithReplayedHandlers(replay.HandlerNames(o.cassette)...))
	}
	if o.promptOverlay != "" {
		sopts = append(sopts, story.WithPromptOverlay(o.promptOverlay))
	}
	return sopts
}

// loadStory loads the story at path with the run's options and resolves its agents' profile
// plan and the run's budget, before the masking: the plan adds the
// profiles' secrets to the story.
func (o *runOpts) loadStory(g *globals, path string, sopts []story.Option) (*story.Story, *profiles.Plan, *agent.Budget, error) {
	st, err := story.Load(path, sopts...)
	if err != nil {
		return nil, nil, nil, exitWith(exitLoad, err)
	}
	agents, budget, err := o.af.plan(g, st)
	if err != nil {
		return nil, nil, nil, exitWith(exitUsage, err)
	}
	if o.budget == nil {
		o.budget = budget
	}
	return st, agents, o.budget, nil
}

// operator gives the session the person at the terminal to ask: the
// UI's question, else the prompt's input (whose lines it shares, in).
func (o *runOpts) operator(cmd *cobra.Command, tw *tuiWiring, session *runtime.Session, stdout io.Writer) (in *driver.Lines, interactive bool) {
	interactive = o.intents == "" && len(o.say) == 0 && isTerminal(cmd.InOrStdin())
	switch {
	case tw != nil:
		session.Operator = tw.ask
	case interactive:
		if o.in == nil {
			o.in = driver.NewLines(cmd.InOrStdin())
		}
		in = o.in
		session.Operator = driver.TerminalOperator(in, stdout)
	}
	return in, interactive
}

// checkFlags refuses flag values a run cannot use before anything is
// opened, and returns the trace's settings.
func (o *runOpts) checkFlags(g *globals) (runtime.Trace, error) {
	tr := runtime.Trace{NoSync: o.sf.durability == "process", SyncHook: g.syncHook}
	for _, p := range o.toolProviders {
		if p != toolserver.StoryFilesProvider {
			return tr, exitWith(exitFailure, fmt.Errorf("--tool-provider %q: unknown tool provider (known: %s)", p, toolserver.StoryFilesProvider))
		}
	}
	switch o.traceSync {
	case "turn":
	case "event":
		tr.SyncPerEvent = true
	default:
		return tr, exitWith(exitFailure, fmt.Errorf("--trace-sync %q: want turn or event", o.traceSync))
	}
	if o.intents != "" && len(o.say) > 0 {
		return tr, exitWith(exitUsage, errors.New("--say and --intents cannot be combined: give the turns as one of them (a free-text line on stdin works too)"))
	}
	if err := orchestrator.CheckExecMode(o.mode); err != nil {
		return tr, exitWith(exitUsage, fmt.Errorf("--mode: %w", err))
	}
	return tr, nil
}

// sessionConfig is how the run's session starts and routes free text.
func (o *runOpts) sessionConfig(cmd *cobra.Command, st *story.Story, world map[string]any) (*runtime.Session, error) {
	routing, err := o.routing.config(cmd, st)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	if o.recording != "" {
		rec, err := testrunner.LoadRecording(o.recording)
		if err != nil {
			return nil, exitWith(exitFailure, err)
		}
		routing.Recording = rec
	}
	return &runtime.Session{World: world, Root: o.root, Routing: routing, ExecMode: o.mode}, nil
}

// drive enters the story and feeds the console its input: --intents,
// --say, the prompt on a terminal, else stdin's lines.
func (o *runOpts) drive(ctx context.Context, cmd *cobra.Command, con *driver.Console, in *driver.Lines, interactive bool) int {
	if code, stop := con.Begin(ctx); stop {
		return code
	}
	switch {
	case o.intents != "":
		return con.Script(ctx, strings.NewReader(strings.ReplaceAll(o.intents, ",", "\n")))
	case len(o.say) > 0:
		return con.Say(ctx, o.say)
	case interactive:
		return con.Prompt(ctx, in)
	default:
		return con.Script(ctx, cmd.InOrStdin())
	}
}

func exitCode(code int) error {
	if code == exitOK {
		return nil
	}
	return exitWith(code, errors.New(""))
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newSessionID() string { return driver.NewID() }

// parseWorldFlags reads --world key=value flags, typed by the declaration
// and checked against it.
func parseWorldFlags(st *story.Story, flags []string) (map[string]any, error) {
	decl := map[string]*story.WorldVar{}
	for _, v := range st.World {
		decl[v.Name] = v
	}
	out := map[string]any{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--world %q: write key=value", f)
		}
		wv, ok := decl[k]
		if !ok {
			names := make([]string, 0, len(decl))
			for n := range decl {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("--world %s: %q is not declared in world: (declared: %s)", f, k, strings.Join(names, ", "))
		}
		x := orchestrator.TypedValue(wv.Type, v)
		if !wv.Fits(x) {
			return nil, fmt.Errorf("--world %s: world key %q is declared %s; %q is not %s", f, k, wv.Type, v, wv.Takes())
		}
		out[k] = x
	}
	return out, nil
}
