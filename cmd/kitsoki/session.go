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
}

func addSessionFlags(cmd *cobra.Command, f *sessionFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.resumeLatest, "continue", false, "resume this story's latest unfinished session (a new one when there is none)")
	fl.StringVar(&f.dir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	fl.StringVar(&f.durability, "durability", "machine", "machine: fsync at each turn's end, survives a power cut; process: no fsync, survives a killed process")
	fl.StringVar(&f.sideEffects, "resume-side-effects", "", "resuming, for an external_side_effect call in flight at the crash: retry (issue it again) or skip (go on without it); default: stop")
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
		Store:       session.Store{Dir: sessionsDir(f.dir, st.Workspace.Dir())},
		Story:       st,
		ID:          o.session,
		Trace:       o.trace,
		Latest:      f.resumeLatest,
		Fork:        f.fork,
		SideEffects: f.sideEffects,
		World:       given,
		Root:        o.root,
		Stderr:      stderr,
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
gets a line saying why; the exit code is then 1.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			w := cmd.OutOrStdout()
			bad := false
			line := func(id string, j *session.Journal, err error) {
				if err != nil {
					bad = true
					fmt.Fprintf(w, "%s\tunreadable: %v\n", id, err)
					return
				}
				m := j.Describe(session.Meta{ID: id})
				fin := "running"
				if m.Finished {
					fin = "finished"
				}
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
					line(id, j, err)
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
					j, err := session.Load(m.Trace)
					line(m.ID, j, err)
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
