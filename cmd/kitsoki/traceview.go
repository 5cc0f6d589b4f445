package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/view/traceview"
)

// runsDir is where kitsoki run keeps its sessions' traces by default, seen
// from the current directory: $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions
// at the root of the workspace around it.
func runsDir() string {
	root, err := workspaceDir(&globals{})
	if err != nil {
		root = "."
	}
	return sessionsDir("", root)
}

func resolveTrace(cmdName, arg string) (string, error) {
	p, err := traceview.SessionTrace(arg, runsDir())
	if err != nil {
		return "", exitWith(exitFailure, fmt.Errorf("kitsoki trace %s: %w", cmdName, err))
	}
	return p, nil
}

// looksLikePath: a FILE argument rather than a session id.
func looksLikePath(arg string) bool {
	return strings.ContainsRune(arg, filepath.Separator) || strings.HasSuffix(arg, ".jsonl")
}

// colorOut: colour on a terminal, unless NO_COLOR is set (no-color.org).
func colorOut(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

func newTraceShowCmd() *cobra.Command {
	var follow, full bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "show <TRACE.jsonl|SESSION>",
		Short: "Print a run's trace as a readable report",
		Long: `Print a run's trace as a report: each turn with its input, routing, intent
and slots, the state changes, world changes (before → after where the trace
showed the value before), says, host calls and the agent calls inside them
(agent, model, duration, tokens, cost, schema verdict, error kind, prompt,
answer, sub-events), rejections and faults; then the totals.

The argument is a trace file, or a session id (or the start of one) of a
trace kitsoki run wrote in the sessions directory ($KITSOKI_SESSIONS_DIR, else
.kitsoki/sessions in the workspace). Colour only on a terminal, and
never with NO_COLOR set. --full prints prompts and answers whole.

--follow prints each turn as it ends while a run appends to the trace, and
stops with the totals when the run closes the trace (or on Ctrl-C). A trace
file that does not exist yet is waited for.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := resolveTrace("show", args[0])
			if err != nil && follow && looksLikePath(args[0]) {
				path, err = args[0], nil // --follow waits for a run to create it
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			o := traceview.ReportOptions{Color: colorOut(out), Full: full}
			if follow {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				t := time.NewTicker(poll)
				defer t.Stop()
				if err := traceview.Follow(ctx, out, path, traceview.FollowOptions{Report: o, Tick: t.C}); err != nil {
					return exitWith(exitFailure, fmt.Errorf("kitsoki trace show: %w", err))
				}
				return nil
			}
			r, err := traceview.Load(path)
			if err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace show: %w", err))
			}
			return traceview.Report(out, r, o)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing turns as a running session appends them")
	cmd.Flags().BoolVar(&full, "full", false, "print prompts, answers and payloads whole")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "with --follow: how often to look at the trace")
	return cmd
}

func newTraceViewCmd() *cobra.Command {
	var out, addr string
	var serve bool
	cmd := &cobra.Command{
		Use:   "view <TRACE.jsonl|SESSION>",
		Short: "Write a run's trace as one self-contained HTML page, or serve it live",
		Long: `Write a run's trace as one HTML file with everything inline (no network, no
CDN: it works offline and as a CI artifact): a timeline of turns with host and
agent calls as spans sized by duration; click a call to see its prompt,
answer, schema verdict, error, sub-events and world diff, or a turn for what
it did; totals of tokens and cost; search.

The page goes to -o FILE (default: the trace's path with .html; -o - for
stdout). --serve serves it instead, on --addr (loopback by default, a free
port unless given), prints the URL, and the open page follows a run that is
still appending to the trace. Ctrl-C stops the server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := resolveTrace("view", args[0])
			if err != nil {
				return err
			}
			if serve {
				return serveTrace(cmd, path, addr)
			}
			r, err := traceview.Load(path)
			if err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
			}
			var buf bytes.Buffer
			if err := traceview.HTML(&buf, r, false); err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
			}
			if out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if out == "" {
				out = strings.TrimSuffix(path, ".jsonl") + ".html"
			}
			if err := outfile.WriteFile(out, buf.Bytes()); err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
			}
			t := r.Totals // counted as kitsoki trace show's totals line counts them
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: wrote %s (%s, %s, %s)\n", out, count(t.Turns, "turn"), count(t.HostCalls, "host call"), count(t.AgentCalls, "agent call"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file (default <trace>.html; - for stdout)")
	cmd.Flags().BoolVar(&serve, "serve", false, "serve the page and follow the run live instead of writing a file")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "with --serve: the address to listen on")
	return cmd
}

func serveTrace(cmd *cobra.Command, path, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("kitsoki trace view: --addr %q: %w (want host:port, e.g. 127.0.0.1:8080)", addr, err))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki trace view: warning: --addr %s is not a loopback address: anyone who can reach it can read the trace\n", addr)
	}
	if _, err := traceview.Load(path); err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(cmd.OutOrStdout(), "kitsoki: serving %s at http://%s/ (Ctrl-C stops)\n", path, ln.Addr())
	s := &traceview.Server{Path: path}
	if err := s.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return exitWith(exitFailure, fmt.Errorf("kitsoki trace view: %w", err))
	}
	return nil
}
