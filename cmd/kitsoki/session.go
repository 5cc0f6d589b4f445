package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/traceview"
)

// sessionFlags are kitsoki run's durable-session flags.
type sessionFlags struct {
	resumeLatest bool
	dir          string
	durability   string
	sideEffects  string
	fork         bool
	// resumeInputs says what scripted inputs given to a resumed session
	// are: new (turns after the journal's last) or replay (the whole run
	// from turn 1, the journal's checked and skipped); "" picks replay for
	// --continue and new for --session ID.
	resumeInputs string
}

func addSessionFlags(cmd *cobra.Command, f *sessionFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.resumeLatest, "continue", false, "resume this story's latest unfinished session (a new one when there is none)")
	fl.StringVar(&f.dir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	fl.StringVar(&f.durability, "durability", "machine", "machine: fsync at each turn's end, survives a power cut; process: no fsync, survives a killed process")
	fl.StringVar(&f.sideEffects, "resume-side-effects", "", "resuming, for an external_side_effect call in flight at the crash: retry (issue it again) or skip (go on without it); default: stop")
	fl.StringVar(&f.resumeInputs, "resume-inputs", "", "resuming with --intents, --say or stdin lines: new (they are turns after the journal's last) or replay (they are the run from turn 1; those the journal holds are checked and skipped); default: replay with --continue, new with --session ID")
	fl.BoolVar(&f.fork, "fork", false, "resuming into a changed story that decides differently: start a new session from the last turn that matched")
}

// sessionsDir is the sessions directory: the flag, the environment, else
// .kitsoki/sessions in the workspace.
func sessionsDir(flag, workspaceRoot string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv(session.EnvDir); d != "" {
		return d
	}
	return session.DefaultDir(workspaceRoot)
}

// sessionPlan is what runStory does with the session: start a new one or
// pick one up.
type sessionPlan struct {
	store  session.Store
	meta   session.Meta
	resume *runtime.Resume
	// replay says the scripted inputs replay the run from turn 1 (else
	// they are new turns); skip is how many of them the journal already
	// holds (0 when they are new), skipped counts those skipped so far,
	// and after is the journal's last turn.
	replay        bool
	skip, skipped int
	after         int
	// explained says the rule was printed (at the first scripted input);
	// announced says the first input taken was named.
	explained, announced bool
	// check reports the inputs skipped that differ from the journal's.
	inputs map[int64]session.Input
}

// plan decides the session of a run: --continue and --session ID of a
// session the directory holds resume it; anything else starts a new one.
func (f *sessionFlags) plan(ctx context.Context, g *globals, o *runOpts, st *story.Story, stderr io.Writer) (*sessionPlan, error) {
	store := session.Store{Dir: sessionsDir(f.dir, st.Workspace.Dir())}
	p := &sessionPlan{store: store}
	if _, err := session.ParseSideEffects(f.sideEffects); err != nil {
		return nil, exitWith(exitFailure, err)
	}
	switch f.durability {
	case "machine", "process":
	default:
		return nil, exitWith(exitFailure, fmt.Errorf("--durability %q: want machine (fsync at each turn's end) or process (no fsync)", f.durability))
	}
	if f.durability == "process" && o.traceSync == "event" {
		return nil, exitWith(exitUsage, errors.New("--durability process never fsyncs; it cannot be combined with --trace-sync=event"))
	}
	if f.resumeLatest && o.session != "" {
		return nil, exitWith(exitUsage, errors.New("--continue picks the latest unfinished session; give it or --session ID, not both"))
	}
	switch f.resumeInputs {
	case "", "new", "replay":
	default:
		return nil, exitWith(exitUsage, fmt.Errorf("--resume-inputs %q: want new (the inputs are turns after the journal's last) or replay (they are the run from turn 1, the journal's skipped)", f.resumeInputs))
	}
	var m session.Meta
	found := false
	switch {
	case f.resumeLatest:
		var err error
		if m, found, err = store.Latest(st.File); err != nil {
			return nil, exitWith(exitFailure, err)
		}
		if !found {
			fmt.Fprintf(stderr, "kitsoki: no unfinished session of %s in %s; starting a new one\n", st.File, store.Dir)
		}
	case o.session != "":
		if err := session.CheckID(o.session); err != nil {
			return nil, exitWith(exitUsage, err)
		}
		got, err := store.Get(o.session)
		switch {
		case err == nil:
			m, found = got, true
		case !errors.Is(err, session.ErrNotFound):
			return nil, exitWith(exitFailure, err)
		}
	}
	if found && !f.resumeLatest && o.trace != "" && absPath(o.trace) != m.Trace {
		// --session ID --trace NEW: a new run under that id, as before
		// sessions were durable; the index entry then points at NEW.
		found = false
	}
	if !found {
		return p, f.newSession(p, o, st)
	}
	if o.trace != "" && absPath(o.trace) != m.Trace {
		return nil, exitWith(exitUsage, fmt.Errorf("session %s keeps its journal at %s; drop --trace to resume it", m.ID, m.Trace))
	}
	named := ""
	if o.trace != "" {
		named = absPath(o.trace)
	}
	if _, err := store.Journal(m, named); err != nil {
		return nil, exitWith(exitFailure, err)
	}
	if m.Story != st.File {
		return nil, exitWith(exitFailure, fmt.Errorf("session %s runs %s, not %s: resume it with that story (or fork it)", m.ID, m.Story, st.File))
	}
	if m.Finished {
		return nil, exitWith(exitFailure, fmt.Errorf("session %s finished in state %q at turn %d; fork it to go on: kitsoki session fork %s --at-turn N", m.ID, m.State, m.Turn, m.ID))
	}
	if err := checkSeed(m, o, st); err != nil {
		return nil, exitWith(exitUsage, err)
	}
	j, err := loadJournal(m, stderr)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	if j.StoryHash != "" && j.StoryHash != st.ContentHash {
		forked, err := f.checkChanged(ctx, g, store, st, m, stderr)
		if err != nil {
			return nil, err
		}
		if forked != nil {
			m, j = forked.meta, forked.j
		}
	}
	policy, _ := session.ParseSideEffects(f.sideEffects)
	if err := j.Partial.CheckSideEffects(st, policy); err != nil {
		return nil, exitWith(exitFailure, err)
	}
	o.session, o.trace = m.ID, m.Trace
	p.meta = m
	p.resume = &runtime.Resume{Journal: j, SideEffects: policy}
	p.inputs = j.Inputs
	p.after = int(j.Turn)
	if j.Partial != nil {
		p.after = int(j.Partial.Turn)
	}
	if !j.Started {
		p.after = 0
	}
	p.replay = f.resumeInputs == "replay" || (f.resumeInputs == "" && f.resumeLatest)
	if p.replay {
		p.skip = p.after
	}
	return p, nil
}

func (f *sessionFlags) newSession(p *sessionPlan, o *runOpts, st *story.Story) error {
	if o.session == "" {
		o.session = newSessionID()
	}
	if o.trace == "" {
		o.trace = p.store.TracePath(o.session)
	}
	abs, err := filepath.Abs(o.trace)
	if err == nil {
		o.trace = abs
	}
	now := time.Now().UTC()
	p.meta = session.Meta{ID: o.session, AppID: st.App.ID, Story: st.File, StoryHash: st.ContentHash,
		Version: version.String(), Trace: o.trace, Created: now, Updated: now, State: "", Turn: 0}
	return nil
}

type forkedSession struct {
	meta session.Meta
	j    *session.Journal
}

// checkChanged runs the nondeterminism check of a resume into a changed
// story: the first turn that decides differently stops the resume, or with
// --fork starts a new session from the last turn that matched.
func (f *sessionFlags) checkChanged(ctx context.Context, g *globals, store session.Store, st *story.Story, m session.Meta, stderr io.Writer) (*forkedSession, error) {
	_, evs, err := session.ReadAll(m.Trace, -1)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	div, matched, err := runtime.CheckJournal(ctx, st, m.ID, evs)
	if err != nil && div == nil {
		return nil, exitWith(exitFailure, fmt.Errorf("session %s: the story changed since the session started, and replaying its journal failed: %w", m.ID, err))
	}
	if div == nil {
		fmt.Fprintf(stderr, "kitsoki: the story changed since session %s started; its %d finished turn(s) replay with the same decisions\n", m.ID, matched)
		return nil, nil
	}
	if !f.fork {
		msg := div.Error()
		if err != nil {
			msg = err.Error()
		}
		return nil, exitWith(exitFailure, fmt.Errorf("session %s: the story changed and decides differently: %s; pass --fork to start a new session from turn %d, the last that matched", m.ID, msg, matched))
	}
	if matched < 0 {
		return nil, exitWith(exitFailure, fmt.Errorf("session %s: %s; no turn matched, so there is nothing to fork", m.ID, div.Error()))
	}
	fm, j, err := forkSession(store, m, matched, st)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	fmt.Fprintf(stderr, "kitsoki: %s\nkitsoki: forked session %s from turn %d of %s\n", div.Error(), fm.ID, matched, m.ID)
	return &forkedSession{meta: fm, j: j}, nil
}

// forkSession writes a new session from turn at of m; st, when set, is the
// story it will run (its hash goes in the header), else m's.
func forkSession(store session.Store, m session.Meta, at int64, st *story.Story) (session.Meta, *session.Journal, error) {
	id := newSessionID()
	hash := m.StoryHash
	if st != nil {
		hash = st.ContentHash
	}
	dst := store.TracePath(id)
	hdr := trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: hash, KitsokiVersion: version.String(),
		SessionID: id, ForkedFrom: m.ID, ForkedAtTurn: at}
	j, err := session.Fork(m.Trace, at, dst, hdr)
	if err != nil {
		return session.Meta{}, nil, fmt.Errorf("session %s: %w", m.ID, err)
	}
	now := time.Now().UTC()
	fm := j.Describe(session.Meta{ID: id, AppID: m.AppID, Story: m.Story, StoryHash: hash, Version: version.String(),
		Trace: dst, Created: now, Updated: now, ForkedFrom: m.ID, ForkedAt: at})
	fm.Updated = now
	if err := store.Put(fm); err != nil {
		return session.Meta{}, nil, err
	}
	return fm, j, nil
}

// header is the session.header of a new session's journal.
func (p *sessionPlan) header() trace.HeaderInfo {
	m := p.meta
	return trace.HeaderInfo{AppID: m.AppID, StoryPath: m.Story, StoryHash: m.StoryHash, KitsokiVersion: m.Version,
		SessionID: m.ID, ForkedFrom: m.ForkedFrom, ForkedAtTurn: m.ForkedAt}
}

// save writes the session's index entry from the live session.
func (p *sessionPlan) save(sess *orchestrator.Session, sink orchestrator.Sink, stderr io.Writer) {
	var size int64
	if w, ok := sink.(interface{ Size() int64 }); ok {
		size = w.Size()
	}
	m := p.meta
	m.State, m.Turn = sess.State(), sess.TurnNumber()
	m.Finished, m.Exit = sess.Done()
	w := sess.World()
	switch c := w["session_cost_usd"].(type) {
	case float64:
		m.CostUSD = c
	case int64:
		m.CostUSD = float64(c)
	}
	m.LastError, _ = w["last_error"].(string)
	m.Updated = time.Now().UTC()
	m.TraceBytes = size
	if err := p.store.Put(m); err != nil {
		fmt.Fprintln(stderr, "kitsoki: warning:", err)
	}
}

// workspaceDir is the workspace root of a command that names no story.
func workspaceDir(g *globals) (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	ws, err := workspace.For(filepath.Join(cwd, "app.yaml"), g.workspace)
	if err != nil {
		return "", err
	}
	return ws.Dir(), nil
}

// start runs turn 0 of a new session, or brings a resumed one to where
// its journal stopped (redoing the unfinished turn), before any input is
// read, so every front end just continues. The outcome is what to report.
func (p *sessionPlan) start(ctx context.Context, sess *orchestrator.Session, sink orchestrator.Sink, stderr io.Writer) (*orchestrator.Outcome, error) {
	if p.resume == nil {
		fmt.Fprintf(stderr, "kitsoki: session %s, trace %s\n", p.meta.ID, p.meta.Trace)
		p.save(sess, sink, stderr)
		return sess.Start(ctx)
	}
	j := p.resume.Journal
	switch {
	case j.Partial != nil:
		fmt.Fprintf(stderr, "kitsoki: resuming session %s: turn %d did not finish; taking it again (trace %s)\n", p.meta.ID, j.Partial.Turn, p.meta.Trace)
	default:
		fmt.Fprintf(stderr, "kitsoki: resuming session %s after turn %d in state %q (trace %s)\n", p.meta.ID, j.Turn, j.State, p.meta.Trace)
	}

	out, err := session.Resume(ctx, sess, sink, j)
	if err != nil || out != nil {
		return out, err
	}
	view, err := sess.View()
	if err != nil {
		return nil, err
	}
	done, exit := sess.Done()
	return &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: sess.State(), State: sess.State(), View: view, Done: done, Exit: exit}, nil
}

// skipInput skips a scripted line the resumed journal already took; a
// line that differs from the journal's stops the run (exit 2).
func (r *runner) skipInput(_ context.Context, line string) (bool, int) {
	p := r.resume
	if p == nil || p.after == 0 {
		return false, exitOK // no turn taken yet: both rules take every input
	}
	if !p.explained {
		p.explained = true
		p.explain(r.errw)
	}
	if p.skipped >= p.skip {
		if !p.announced {
			p.announced = true
			fmt.Fprintf(r.errw, "kitsoki: resuming session %s: taking input %d %q as turn %d\n", p.meta.ID, p.skipped+1, line, p.after+1)
		}
		return false, exitOK
	}
	p.skipped++
	if in, ok := p.inputs[int64(p.skipped)]; ok && in.Text != line {
		fmt.Fprintf(r.errw, "kitsoki: resuming session %s: input %d is %q, but the session's turn %d took %q; give the same inputs as the run that started it (the journal's are skipped), run them as new turns with --resume-inputs=new, or start a new session\n",
			p.meta.ID, p.skipped, line, p.skipped, in.Text)
		return true, exitUsage
	}
	fmt.Fprintf(r.errw, "kitsoki: resuming session %s: skipping input %d %q: the journal's turn %d took it\n", p.meta.ID, p.skipped, line, p.skipped)
	return true, exitOK
}

// explain says what the scripted inputs of a resume are: the run replayed
// from turn 1 (the journal's skipped) or new turns after the journal's.
func (p *sessionPlan) explain(w io.Writer) {
	switch {
	case !p.replay:
		fmt.Fprintf(w, "kitsoki: resuming session %s: the inputs given are new turns after the journal's turn %d (--resume-inputs=replay would take them as the run from turn 1)\n", p.meta.ID, p.after)
	default:
		fmt.Fprintf(w, "kitsoki: resuming session %s: the inputs given replay the run from turn 1: inputs 1 to %d are the journal's turns and are skipped, each checked against it (--resume-inputs=new would run them as new turns)\n", p.meta.ID, p.skip)
	}
}

func newSessionCmd(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "session",
		Short: "List, show, delete and fork durable sessions",
		Long: `Work with the durable sessions kitsoki run keeps in the sessions directory
(--sessions-dir, else $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the
workspace). Resume one with kitsoki run app.yaml --session ID (or
--continue for the story's latest unfinished one). With --temporal
HOST:PORT, list, show and trace read the sessions on a Temporal cluster
(kitsoki run --temporal starts them).`,
	}
	cmd.PersistentFlags().StringVar(&dir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	addWorkspaceFlag(cmd, g)
	store := func() (session.Store, error) {
		if dir != "" {
			return session.Store{Dir: dir}, nil
		}
		root, err := workspaceDir(g)
		if err != nil {
			return session.Store{}, exitWith(exitFailure, err)
		}
		return session.Store{Dir: sessionsDir("", root)}, nil
	}
	var tf temporalFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "One line per session: id, story, state, turn, last activity, finished, cost",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tf.addr != "" {
				return sessionListCluster(cmd, g, &tf)
			}
			s, err := store()
			if err != nil {
				return err
			}
			all, err := s.List()
			if err != nil {
				return exitWith(exitFailure, err)
			}
			w := cmd.OutOrStdout()
			if len(all) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: no sessions in %s\n", s.Dir)
				return nil
			}
			fmt.Fprintln(w, "ID\tSTORY\tSTATE\tTURN\tLAST ACTIVITY\tFINISHED\tCOST")
			for _, m := range all {
				fin := "no"
				if m.Finished {
					fin = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t$%.4f\n", m.ID, storyName(m), orDefault(m.State, "-"), m.Turn,
					m.Updated.UTC().Format(time.RFC3339), fin, m.CostUSD)
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show <ID>",
		Short: "A session's index entry and where its journal stopped, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tf.addr != "" {
				return sessionShowCluster(cmd, g, &tf, args[0])
			}
			s, err := store()
			if err != nil {
				return err
			}
			m, err := s.Get(args[0])
			if err != nil {
				return exitWith(exitFailure, err)
			}
			out := map[string]any{"session": m}
			if _, err := s.Journal(m, ""); err != nil {
				out["journal_error"] = err.Error()
			} else if j, err := session.Load(m.Trace); err == nil {
				st := map[string]any{"state": j.State, "turn": j.Turn, "world": j.World, "finished": j.Done}
				if j.Partial != nil {
					st["unfinished_turn"] = map[string]any{"turn": j.Partial.Turn, "input": j.Partial.Input.Text, "calls": j.Partial.Calls}
				}
				out["journal"] = st
			} else {
				out["journal_error"] = err.Error()
			}
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				return exitWith(exitFailure, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete <ID>",
		Short: "Delete a session: its journal and its index entry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			kept, err := s.Delete(args[0])
			if err != nil {
				return exitWith(exitFailure, err)
			}
			if kept != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s's index entry; its journal %s is outside the sessions directory %s and was left in place\n", args[0], kept, s.Dir)
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s\n", args[0])
			return nil
		},
	}
	var at int64
	fork := &cobra.Command{
		Use:   "fork <ID> --at-turn N",
		Short: "Start a new session from turn N of an old one (the old one stays as it is)",
		Long: `Start a new session from turn N of an old one: the new journal holds the
old one's turns 0 to N and a snapshot of where turn N left the session.
The old session is not changed. Resume the new one with
kitsoki run <its story> --session <new id>. The id goes to stdout.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("at-turn") {
				return exitWith(exitUsage, errors.New("kitsoki session fork: give --at-turn N (the turn to fork from; kitsoki session show ID tells the last one)"))
			}
			s, err := store()
			if err != nil {
				return err
			}
			m, err := s.Get(args[0])
			if err != nil {
				return exitWith(exitFailure, err)
			}
			if _, err := s.Journal(m, ""); err != nil {
				return exitWith(exitFailure, err)
			}
			fm, _, err := forkSession(s, m, at, nil)
			if err != nil {
				return exitWith(exitFailure, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), fm.ID)
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: forked session %s from turn %d of %s; resume it with kitsoki run %s --session %s\n", fm.ID, at, m.ID, m.Story, fm.ID)
			return nil
		},
	}
	fork.Flags().Int64Var(&at, "at-turn", 0, "the turn to fork from (0 is the session's start)")
	var traceOut string
	traceCmd := &cobra.Command{
		Use:   "trace <ID> --temporal HOST:PORT [-o FILE]",
		Short: "Write the JSONL trace of a session on a Temporal cluster",
		Long: `Write the JSONL trace of a session on a Temporal cluster (to -o FILE, else
stdout): the session.header line, then every event of every run of its
workflow, the events a local run of the same inputs writes. The trace is
read with a query, which a worker of the session's task queue answers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tf.addr == "" {
				return exitWith(exitUsage, errTraceNeedsTemporal)
			}
			return sessionTraceCluster(cmd, g, &tf, args[0], traceOut)
		},
	}
	traceCmd.Flags().StringVarP(&traceOut, "output", "o", "", "write the trace to this file (mode 0600) instead of stdout")
	for _, c := range []*cobra.Command{list, show, traceCmd} {
		addTemporalFlags(c, &tf, false)
	}
	cmd.AddCommand(list, show, del, fork, traceCmd)
	return cmd
}

func storyName(m session.Meta) string {
	if m.AppID != "" {
		return m.AppID
	}
	return filepath.Base(m.Story)
}

// runStatus says whether a session finished, runs, exited or was
// interrupted: finished from the journal; running while a writer holds
// its lock; interrupted when a turn did not finish, or when the journal
// grew past the size its index entry recorded when the run ended
// (indexed: the entry as written, nil for a trace given as a file); else
// exited.
func runStatus(path string, j *session.Journal, indexed *session.Meta) string {
	switch {
	case j.Done:
		return "finished"
	case traceview.WriterActive(path):
		return "running"
	case j.Partial != nil:
		return "interrupted"
	case indexed != nil && indexed.TraceBytes != j.Size:
		return "interrupted"
	}
	return "exited"
}

// newTraceStatusCmd is kitsoki trace status: one line per session.
func newTraceStatusCmd() *cobra.Command {
	g := &globals{}
	var dir string
	cmd := &cobra.Command{
		Use:   "status [TRACE.jsonl ...]",
		Short: "One line per session: state, turn, last error, cost, idle time",
		Long: `Print one line per session of the sessions directory (--sessions-dir, else
$KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the workspace), or of the
trace files given: id, state, turn, whether it finished, cost, idle time
(since its last event) and its last error. A trace that cannot be read
gets a line saying why; the exit code is then 1.

Whether it finished is one of: finished (a terminal state or exit was
reached), running (a process holds the journal's writer lock), exited (its
process ended without a terminal state, as when the input ran out), or
interrupted (its process died: a turn did not finish, or the journal grew
after the index entry was last written and nobody holds it).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			w := cmd.OutOrStdout()
			bad := false
			line := func(id, path string, j *session.Journal, indexed *session.Meta, err error) {
				if err != nil {
					bad = true
					fmt.Fprintf(w, "%s\tunreadable: %v\n", id, err)
					return
				}
				m := j.Describe(session.Meta{ID: id})
				fin := runStatus(path, j, indexed)
				idle := "-"
				if !m.Updated.IsZero() {
					idle = now.Sub(m.Updated).Round(time.Second).String()
				}
				fmt.Fprintf(w, "%s\tstate=%s\tturn=%d\t%s\tcost=$%.4f\tidle=%s\tlast_error=%q\n", id, orDefault(m.State, "-"), m.Turn, fin, m.CostUSD, idle, m.LastError)
			}
			if len(args) > 0 {
				for _, p := range args {
					j, err := session.Load(p)
					id := strings.TrimSuffix(filepath.Base(p), ".jsonl")
					if err == nil && j.Header.SessionID != "" {
						id = j.Header.SessionID
					}
					line(id, p, j, nil, err)
				}
			} else {
				s := session.Store{Dir: dir}
				if dir == "" {
					root, err := workspaceDir(g)
					if err != nil {
						return exitWith(exitFailure, err)
					}
					s.Dir = sessionsDir("", root)
				}
				all, err := s.List()
				if err != nil {
					return exitWith(exitFailure, err)
				}
				if len(all) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: no sessions in %s\n", s.Dir)
				}
				for _, m := range all {
					if _, err := s.Journal(m, ""); err != nil {
						line(m.ID, m.Trace, nil, nil, err)
						continue
					}
					indexed, err := s.Entry(m.ID)
					if err != nil {
						line(m.ID, m.Trace, nil, nil, err)
						continue
					}
					j, err := session.Load(m.Trace)
					line(m.ID, m.Trace, j, &indexed, err)
				}
			}
			if bad {
				return exitWith(exitFailure, errors.New(""))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	addWorkspaceFlag(cmd, g)
	return cmd
}

// loadJournal reads a session's journal to resume it; a last line a crash
// left half-written is cut off first (it is an event that never was).
func loadJournal(m session.Meta, stderr io.Writer) (*session.Journal, error) {
	j, err := session.Load(m.Trace)
	var fe *trace.FormatError
	if err == nil || !errors.As(err, &fe) || !strings.Contains(fe.Msg, "missing trailing newline") {
		return j, err
	}
	cut, rerr := trace.RepairTail(m.Trace)
	if rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if cut > 0 {
		fmt.Fprintf(stderr, "kitsoki: session %s: cut the last %d byte(s) of its journal, a line the crash left unfinished\n", m.ID, cut)
	}
	return session.Load(m.Trace)
}

// checkSeed compares the --world and --root of a resumed run with how the
// session started (its turn 0): the same command may be given again, a
// different start may not.
func checkSeed(m session.Meta, o *runOpts, st *story.Story) error {
	if len(o.world) == 0 && o.root == "" {
		return nil
	}
	t0, err := session.ReadTurn0(m.Trace)
	if err != nil {
		return err
	}
	root, world := session.Seed(t0)
	if o.root != "" && o.root != root {
		return fmt.Errorf("--root %s: session %s started in %q; --world and --root set how a new session starts, so give the same ones or none to resume it", o.root, m.ID, root)
	}
	given, err := parseWorldFlags(st, o.world)
	if err != nil {
		return err
	}
	for k, v := range given {
		if fmt.Sprint(session.Normalize(v)) != fmt.Sprint(world[k]) {
			return fmt.Errorf("--world %s=%v: session %s started with %s=%v; --world and --root set how a new session starts, so give the same ones or none to resume it", k, v, m.ID, k, world[k])
		}
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
