package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// sessionCmd holds what the kitsoki session commands share: the sessions
// directory, the agents a create or continue runs with, --json.
type sessionCmd struct {
	g        *globals
	dir      string
	json     bool
	cassette string
	timeout  time.Duration
	tf       temporalFlags
}

// store is the sessions directory: --sessions-dir, else
// $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the working
// directory's workspace.
func (c *sessionCmd) store() (session.Store, error) {
	if c.dir != "" {
		return session.Store{Dir: c.dir}, nil
	}
	root, err := workspaceDir(c.g)
	if err != nil {
		return session.Store{}, exitWith(exitFailure, err)
	}
	return session.Store{Dir: sessionsDir("", root)}, nil
}

// sessions is the session API over the store, with live agents (or
// --cassette), no operator and the run's pins, as kitsoki run --autopilot
// would run them.
func (c *sessionCmd) sessions(cmd *cobra.Command) (*driver.Sessions, error) {
	store, err := c.store()
	if err != nil {
		return nil, err
	}
	return sessionService(c.g, store, cmd.ErrOrStderr(), sessionAgents{cassette: c.cassette, timeout: c.timeout}), nil
}

// sessionAgents are how the sessions of the session API get their agents.
type sessionAgents struct {
	cassette string
	timeout  time.Duration
	// models is the local model pool the sessions share (nil: each its
	// own).
	models *localllm.Pool
}

// sessionService is the session API over store: stories loaded with the
// workspace flags, live agents (or a cassette), no operator, the story's
// pins honoured as kitsoki run honours them.
func sessionService(g *globals, store session.Store, stderr io.Writer, a sessionAgents) *driver.Sessions {
	return &driver.Sessions{
		Store:  store,
		Stderr: stderr,
		Load: func(path string) (*story.Story, error) {
			opts := g.storyOpts()
			if a.cassette != "" {
				opts = append(opts, story.WithReplayedHandlers(replay.HandlerNames(a.cassette)...))
			}
			return story.Load(path, opts...)
		},
		Config: func(st *story.Story) (runtime.Config, func() error, error) {
			masked := redacting(stderr, st.Secrets)
			cfg := runtime.Config{
				Logger:      g.logger(masked),
				Agents:      runtime.Agents{Live: true},
				Timeout:     a.timeout,
				PinWarning:  pinWarnings(masked),
				Tools:       runtime.Tools{Autopilot: true},
				LocalModels: a.models,
			}
			as, err := setupAgents(&runOpts{cassette: a.cassette}, st)
			if err != nil {
				return cfg, nil, err
			}
			as.configure(&cfg)
			return cfg, func() error { as.finish(stderr); return nil }, nil
		},
	}
}

func newSessionCmd(g *globals) *cobra.Command {
	c := &sessionCmd{g: g}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create, continue, inspect, list, fork, delete and prune durable sessions",
		Long: `Work with the durable sessions kept in the sessions directory
(--sessions-dir, else $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the
workspace of the working directory).

A bot drives a session one event at a time: session create APP --key
transport:thread starts one (turn 0), session continue KEY --intent LINE |
--text TEXT | --raw LINE takes one input and exits, session inspect shows
where it stands. --json prints a frame (docs/sessions.md). One process at a
time holds a session: a second gets exit 75 (busy) and takes nothing; try
again later.

kitsoki run app.yaml --session ID resumes one at a terminal (--continue for
the story's latest unfinished one). With --temporal HOST:PORT every
session command works on the sessions of a Temporal cluster instead (a
key is the session's workflow id; fork takes a running session's current
turn; prune measures a running session by its last turn).

Exit codes of create and continue: 0 the turn was taken (a terminal state
too: the frame says done), 1 failure, 2 usage or the story did not load,
3 rejected input, 4 a failed call no on_error handled, 5 a fault, 75 the
session is busy.`,
	}
	cmd.PersistentFlags().StringVar(&c.dir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	addWorkspaceFlag(cmd, g)
	cmd.AddCommand(c.createCmd(), c.continueCmd(), c.inspectCmd(), c.listCmd(), c.showCmd(), c.deleteCmd(), c.forkCmd(), c.traceCmd(), c.pruneCmd())
	return cmd
}

// addRunFlags adds the flags of the commands that take turns.
func (c *sessionCmd) addRunFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&c.json, "json", false, "print the frame as JSON (docs/sessions.md) instead of the turn's says and view")
	f.StringVar(&c.cassette, "cassette", "", "replay this cassette in place of the declared agents")
	f.DurationVar(&c.timeout, "agent-timeout", host.DefaultTimeout, "hard deadline of an agent call that sets no with.timeout")
}

func (c *sessionCmd) createCmd() *cobra.Command {
	var key, id, root string
	var world []string
	cmd := &cobra.Command{
		Use:   "create <app.yaml> [--key transport:thread] [--session ID]",
		Short: "Start a session (turn 0) and print its first frame",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := c.worldFlags(args[0], world)
			if err != nil {
				return err
			}
			if c.tf.addr != "" {
				return c.clusterCreate(cmd, driver.CreateRequest{Story: args[0], Key: key, ID: id, World: w, Root: root})
			}
			if err := c.tf.refuseWithout(cmd); err != nil {
				return err
			}
			svc, err := c.sessions(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o, f, err := svc.Create(ctx, driver.CreateRequest{Story: args[0], Key: key, ID: id, World: w, Root: root})
			if err != nil {
				return c.fail(cmd, key+id, err)
			}
			// A background job turn 0 started runs in this process: wait for it.
			if f, err = o.Settled(ctx, f); err != nil {
				return errors.Join(c.fail(cmd, key+id, err), o.Close())
			}
			if err := o.Close(); err != nil {
				return exitWith(exitFailure, err)
			}
			return c.print(cmd, f)
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "name the session from outside: transport:thread, e.g. jira:PLTFRM-12345")
	cmd.Flags().StringVar(&id, "session", "", "the session id (default: generated)")
	cmd.Flags().StringArrayVar(&world, "world", nil, "set a world value at start, key=value (repeatable)")
	cmd.Flags().StringVar(&root, "root", "", "start in this state instead of the story's root")
	c.addRunFlags(cmd)
	addTemporalFlags(cmd, &c.tf, true)
	return cmd
}

// worldFlags reads --world against the story's declarations.
func (c *sessionCmd) worldFlags(path string, flags []string) (map[string]any, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	st, err := story.Load(path, c.g.storyOpts()...)
	if err != nil {
		return nil, exitWith(exitLoad, err)
	}
	defer st.Close()
	w, err := parseWorldFlags(st, flags)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	return w, nil
}

func (c *sessionCmd) continueCmd() *cobra.Command {
	var intent, text, raw, sideEffects string
	var fork bool
	cmd := &cobra.Command{
		Use:   "continue <KEY|ID> --intent LINE | --text TEXT | --raw LINE",
		Short: "Take one input in a session and print the frame of the turn",
		Long: `Take one input in a session and exit: --intent 'order drink=espresso' is a
typed intent line (never routed), --text is free text (routed to one of the
state's intents), --raw is a line as kitsoki run reads one (typed when it
reads as an intent, else free text). A turn the journal left unfinished (a
crash) is taken again first. The session's writer lock is held from the
journal's read to the index's write; another process holding it is exit 75.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := oneInput(cmd, intent, text, raw)
			if err != nil {
				return err
			}
			if c.tf.addr != "" {
				return c.clusterContinue(cmd, args[0], in)
			}
			if err := c.tf.refuseWithout(cmd); err != nil {
				return err
			}
			svc, err := c.sessions(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			f, err := svc.Continue(ctx, driver.ResumeRequest{Ref: args[0], Fork: fork, SideEffects: sideEffects}, in)
			if err != nil {
				return c.fail(cmd, args[0], err)
			}
			return c.print(cmd, f)
		},
	}
	f := cmd.Flags()
	f.StringVar(&intent, "intent", "", "a typed intent line: intent key=value ...")
	f.StringVar(&text, "text", "", "free text, routed to one of the state's intents")
	f.StringVar(&raw, "raw", "", "a line as kitsoki run reads it: a typed intent when it reads as one, else free text")
	f.BoolVar(&fork, "fork", false, "when the story changed and decides differently, fork from the last turn that matched instead of refusing")
	f.StringVar(&sideEffects, "resume-side-effects", "", "for an external_side_effect call in flight at a crash: retry or skip (default: stop)")
	c.addRunFlags(cmd)
	addTemporalFlags(cmd, &c.tf, true)
	return cmd
}

// oneInput is the one input of a continue.
func oneInput(cmd *cobra.Command, intent, text, raw string) (driver.Input, error) {
	var ins []driver.Input
	for _, x := range []struct {
		flag string
		in   driver.Input
	}{{"intent", driver.Line(intent)}, {"text", driver.Text(text)}, {"raw", driver.Raw(raw)}} {
		if cmd.Flags().Changed(x.flag) {
			ins = append(ins, x.in)
		}
	}
	if len(ins) != 1 {
		return driver.Input{}, exitWith(exitUsage, errors.New("kitsoki session continue: give one input: --intent 'name key=value …', --text 'free text' or --raw LINE"))
	}
	return ins[0], nil
}

func (c *sessionCmd) inspectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect <KEY|ID>",
		Short: "Where a session stands: state, view, allowed intents, world",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := c.inspect(cmd, args[0])
			if err != nil {
				return err
			}
			if c.json {
				return c.print(cmd, f)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "session %s", f.Session.ID)
			if f.Session.Key != "" {
				fmt.Fprintf(out, " (key %s)", f.Session.Key)
			}
			fmt.Fprintf(out, ", turn %d, %s\n", f.Session.Turn, finishedText(f.Done))
			c.describe(out, f)
			writeJobs(out, f.Jobs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&c.json, "json", false, "print the frame as JSON (docs/sessions.md)")
	addTemporalFlags(cmd, &c.tf, true)
	return cmd
}

// inspect is the frame of where the session ref stands, on the cluster
// with --temporal, else in the sessions directory.
func (c *sessionCmd) inspect(cmd *cobra.Command, ref string) (*driver.Frame, error) {
	if c.tf.addr != "" {
		return c.clusterInspect(cmd, ref)
	}
	if err := c.tf.refuseWithout(cmd); err != nil {
		return nil, err
	}
	svc, err := c.sessions(cmd)
	if err != nil {
		return nil, err
	}
	f, err := svc.Inspect(cmd.Context(), ref)
	if err != nil {
		return nil, c.fail(cmd, ref, err)
	}
	return f, nil
}

func finishedText(done bool) string {
	if done {
		return "finished"
	}
	return "not finished"
}

// print writes a frame: as JSON with --json, else the turn's says and
// view on stdout and its errors on stderr, as kitsoki run prints a turn,
// then the state and what it accepts. The exit code is the frame's.
func (c *sessionCmd) print(cmd *cobra.Command, f *driver.Frame) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if c.json {
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return exitWith(exitFailure, err)
		}
		fmt.Fprintln(out, string(b))
		return exitCode(f.Status.Code)
	}
	for _, s := range f.Says {
		fmt.Fprintln(out, s)
	}
	for _, h := range f.Handled {
		fmt.Fprintln(errw, h)
	}
	switch {
	case f.Rejection != nil:
		fmt.Fprintln(errw, f.Rejection.Error())
		if f.Rejection.GuardHint != "" {
			fmt.Fprintln(errw, "hint:", f.Rejection.GuardHint)
		}
	case f.Error != "":
		fmt.Fprintln(errw, "error:", f.Error)
	case f.View != "":
		fmt.Fprintln(out, f.View)
	}
	for _, e := range f.CallErrors {
		fmt.Fprintln(errw, "error:", e)
	}
	if f.Exit != "" {
		fmt.Fprintf(errw, "kitsoki: reached exit %q\n", f.Exit)
	}
	fmt.Fprintf(errw, "kitsoki: session %s, turn %d\n", f.Session.ID, f.Session.Turn)
	if !f.Done {
		c.describe(out, f)
	}
	return exitCode(f.Status.Code)
}

// describe prints the frame's state and the intents it accepts, as the
// prompt shows them.
func (c *sessionCmd) describe(w io.Writer, f *driver.Frame) {
	st := &driver.Status{State: f.State, Description: f.Description, Intents: f.AllowedIntents}
	driver.Describe(w, st)
}

// writeJobs lists the background jobs not ended, one line each:
// "job ID (handler): status", with a question's prompt.
func writeJobs(w io.Writer, js []driver.FrameJob) {
	for _, j := range js {
		fmt.Fprintf(w, "job %s (%s): %s", j.ID, j.Handler, strings.ReplaceAll(j.Status, "_", " "))
		if j.Question != nil && j.Question.Prompt != "" {
			fmt.Fprintf(w, ": %s", j.Question.Prompt)
		}
		fmt.Fprintln(w)
	}
}

// fail reports a call that could not run: with --json as an error frame
// on stdout, else the error on stderr; the exit code is the error's (75
// for a busy session).
func (c *sessionCmd) fail(cmd *cobra.Command, ref string, err error) error {
	code := driver.CodeOf(err)
	if c.json {
		b, _ := json.MarshalIndent(driver.ErrorFrame(ref, err), "", "  ")
		fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return exitWith(code, errors.New("kitsoki: "+err.Error()))
	}
	return exitWith(code, errors.New("kitsoki: "+err.Error()))
}

func (c *sessionCmd) listCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "One line per session: id, story, state, turn, last activity, finished, cost",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.tf.addr != "" {
				return sessionListCluster(cmd, c.g, &c.tf)
			}
			s, err := c.store()
			if err != nil {
				return err
			}
			all, err := s.List()
			if err != nil {
				return exitWith(exitFailure, err)
			}
			w := cmd.OutOrStdout()
			if c.json {
				if all == nil {
					all = []session.Meta{}
				}
				b, err := json.MarshalIndent(all, "", "  ")
				if err != nil {
					return exitWith(exitFailure, err)
				}
				fmt.Fprintln(w, string(b))
				return nil
			}
			if len(all) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: no sessions in %s\n", s.Dir)
				return nil
			}
			printSessions(w, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&c.json, "json", false, "print the index entries as a JSON array")
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

// printSessions writes the list's table, one buffered write.
func printSessions(w io.Writer, all []session.Meta) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintln(bw, "ID\tSTORY\tSTATE\tTURN\tLAST ACTIVITY\tFINISHED\tCOST")
	for _, m := range all {
		fin := "no"
		if m.Finished {
			fin = "yes"
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\t%d\t%s\t%s\t$%.4f\n", m.ID, storyName(m), orDefault(m.State, "-"), m.Turn,
			m.Updated.UTC().Format(time.RFC3339), fin, m.CostUSD)
	}
}

func (c *sessionCmd) showCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show <KEY|ID>",
		Short: "A session's index entry and where its journal stopped (--json: as JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.tf.addr != "" {
				return sessionShowCluster(cmd, c.g, &c.tf, args[0], c.json)
			}
			s, err := c.store()
			if err != nil {
				return err
			}
			m, err := s.Find(args[0])
			if err != nil {
				return exitWith(exitFailure, err)
			}
			var j *session.Journal
			var jerr string
			if _, err := s.Journal(m, ""); err != nil {
				jerr = err.Error()
			} else if j, err = session.Load(m.Trace); err != nil {
				j, jerr = nil, err.Error()
			}
			if !c.json {
				if err := localShowText(m, j, jerr).write(cmd.OutOrStdout()); err != nil {
					return exitWith(exitFailure, err)
				}
				return nil
			}
			return printShowJSON(cmd.OutOrStdout(), localShowJSON(m, j, jerr))
		},
	}
	cmd.Flags().BoolVar(&c.json, "json", false, "print the entry and the journal's stop as one JSON object")
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

func (c *sessionCmd) deleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete <KEY|ID>",
		Short: "Delete a session: its journal, its index entry and its key (on a cluster: its workflow and history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.tf.addr != "" {
				return c.clusterDelete(cmd, args[0])
			}
			svc, err := c.sessions(cmd)
			if err != nil {
				return err
			}
			m, kept, err := svc.Delete(args[0])
			if err != nil {
				return exitWith(driver.CodeOf(err), err)
			}
			if kept != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s's index entry; its journal %s is outside the sessions directory %s and was left in place\n", m.ID, kept, svc.Store.Dir)
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s\n", m.ID)
			return nil
		},
	}
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

func (c *sessionCmd) forkCmd() *cobra.Command {
	var at int64
	cmd := &cobra.Command{
		Use:   "fork <KEY|ID> --at-turn N",
		Short: "Start a new session from turn N of an old one (the old one stays as it is)",
		Long: `Start a new session from turn N of an old one: the new journal holds the
old one's turns 0 to N and a snapshot of where turn N left the session.
The old session is not changed, and keeps its key. Resume the new one with
kitsoki run <its story> --session <new id>, or kitsoki session continue
<new id>. The id goes to stdout.

With --temporal HOST:PORT a running session on the cluster is forked at
--at-turn N (any finished turn; without it, the current turn) into a new
workflow that runs the same story bundle: state, world, turn, armed
timeouts, room history and open overlays carried over. An earlier turn
is found by replaying the session's trace through its story bundle, every
call answered from the trace.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.tf.addr != "" {
				var turn *int64
				if cmd.Flags().Changed("at-turn") {
					turn = &at
				}
				return c.clusterFork(cmd, args[0], turn, "")
			}
			if err := c.tf.refuseWithout(cmd); err != nil {
				return err
			}
			if !cmd.Flags().Changed("at-turn") {
				return exitWith(exitUsage, errors.New("kitsoki session fork: give --at-turn N (the turn to fork from; kitsoki session show ID tells the last one)"))
			}
			svc, err := c.sessions(cmd)
			if err != nil {
				return err
			}
			fm, err := svc.Fork(args[0], at)
			if err != nil {
				return exitWith(driver.CodeOf(err), err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), fm.ID)
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: forked session %s from turn %d of %s; resume it with kitsoki run %s --session %s\n", fm.ID, at, fm.ForkedFrom, fm.Story, fm.ID)
			return nil
		},
	}
	cmd.Flags().Int64Var(&at, "at-turn", 0, "the turn to fork from (0 is the session's start; with --temporal, the current turn when not given)")
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

func (c *sessionCmd) traceCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "trace <KEY|ID> [-o FILE]",
		Short: "Write the JSONL trace of a session (its journal, or, with --temporal, its workflow's)",
		Long: `Write the JSONL trace of a session (to -o FILE, else stdout). A local
session's trace is its journal. With --temporal HOST:PORT it is the
session.header line, then every event of every run of its workflow, the
events a local run of the same inputs writes; a worker of the session's
task queue answers the query that reads it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.tf.addr != "" {
				return sessionTraceCluster(cmd, c.g, &c.tf, args[0], out)
			}
			svc, err := c.sessions(cmd)
			if err != nil {
				return err
			}
			b, err := svc.Trace(args[0])
			if err != nil {
				return exitWith(driver.CodeOf(err), err)
			}
			return writeTraceOut(cmd.OutOrStdout(), cmd.ErrOrStderr(), out, b, args[0])
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the trace to this file (mode 0600) instead of stdout")
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

func (c *sessionCmd) pruneCmd() *cobra.Command {
	var older time.Duration
	var dry bool
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION [--dry-run]",
		Short: "Delete the sessions idle for longer than DURATION (e.g. 720h)",
		Long: `Delete every session whose last activity is older than --older-than (a Go
duration: 90m, 48h, 720h): its journal, index entry, key and lock file. A
session a process holds is left and named on stderr. The ids deleted go to
stdout, one a line; --dry-run lists them and deletes nothing.

With --temporal HOST:PORT the sessions of the cluster's namespace are
pruned: a closed session's last activity is its close, a running one's
the end of its last turn; its workflow and history are deleted (a running
one is terminated first). A running session no worker answers for is
left and named.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if older <= 0 {
				return exitWith(exitUsage, errors.New("kitsoki session prune: give --older-than DURATION, a positive Go duration such as 720h"))
			}
			if c.tf.addr != "" {
				return c.clusterPrune(cmd, older, dry)
			}
			if err := c.tf.refuseWithout(cmd); err != nil {
				return err
			}
			s, err := c.store()
			if err != nil {
				return err
			}
			now := time.Now()
			if dry {
				all, err := s.List()
				if err != nil {
					return exitWith(exitFailure, err)
				}
				for _, m := range all {
					if m.Updated.Before(now.Add(-older)) {
						fmt.Fprintln(cmd.OutOrStdout(), m.ID)
					}
				}
				return nil
			}
			deleted, skipped, err := s.Prune(now.Add(-older))
			for _, m := range deleted {
				fmt.Fprintln(cmd.OutOrStdout(), m.ID)
			}
			for _, id := range skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: session %s is held by another process; left\n", id)
			}
			if err != nil {
				return exitWith(exitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: pruned %d session(s) idle for more than %s from %s\n", len(deleted), older, s.Dir)
			return nil
		},
	}
	cmd.Flags().DurationVar(&older, "older-than", 0, "delete the sessions whose last activity is older than this")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "list what would be deleted, delete nothing")
	addTemporalFlags(cmd, &c.tf, false)
	return cmd
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
