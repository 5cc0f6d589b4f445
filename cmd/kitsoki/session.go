package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/session"
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

// plan decides the session of a run (driver.NewPlan): --continue and
// --session ID of a session the directory holds resume it; anything else
// starts a new one. It holds the session's writer lock.
func (f *sessionFlags) plan(ctx context.Context, o *runOpts, st *story.Story, world map[string]any, stderr io.Writer) (*driver.Plan, error) {
	switch f.durability {
	case "machine", "process":
	default:
		return nil, exitWith(exitFailure, fmt.Errorf("--durability %q: want machine (fsync at each turn's end) or process (no fsync)", f.durability))
	}
	if f.durability == "process" && o.traceSync == "event" {
		return nil, exitWith(exitUsage, errors.New("--durability process never fsyncs; it cannot be combined with --trace-sync=event"))
	}
	var given map[string]any
	if len(o.world) > 0 {
		given = world
	}
	return driver.NewPlan(ctx, driver.PlanRequest{
		Store:        session.Store{Dir: sessionsDir(f.dir, st.Workspace.Dir())},
		Story:        st,
		ID:           o.session,
		Trace:        o.trace,
		Latest:       f.resumeLatest,
		Fork:         f.fork,
		SideEffects:  f.sideEffects,
		ResumeInputs: f.resumeInputs,
		World:        given,
		Root:         o.root,
		Stderr:       stderr,
	})
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
	case trace.WriterActive(path):
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

// absPath is p made absolute (p as it is when that fails).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
