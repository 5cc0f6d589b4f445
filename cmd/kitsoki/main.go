// Command kitsoki runs, validates and tests YAML stories: state machines
// whose states call LLM agents.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// Exit codes, documented in `kitsoki run --help` and docs/runtime.md;
// internal/run/driver defines them for every front end.
const (
	exitOK         = driver.ExitOK         // a terminal state or an exit was reached
	exitFailure    = driver.ExitFailure    // I/O and trace failures, values a command refuses
	exitUsage      = driver.ExitUsage      // the command line is wrong (unknown command or flag, bad flag value, wrong arguments)
	exitLoad       = driver.ExitLoad       // the story did not load
	exitRejected   = driver.ExitRejected   // an intent was rejected (guard failed, unknown intent, bad slots)
	exitAgent      = driver.ExitAgent      // an agent or host call failed and no on_error handled it
	exitMachine    = driver.ExitMachine    // a turn aborted on an expression or effect fault
	exitIncomplete = driver.ExitIncomplete // input ended before a terminal state
	exitBusy       = driver.ExitBusy       // another process holds the session's writer lock
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// globals are the flags every command shares.
type globals struct {
	logLevel  string
	workspace string // --workspace, on the commands that load stories
	// storiesPath is --stories-path (repeatable): where @kitsoki/NAME
	// imports are looked up first.
	storiesPath []string
	// syncHook, set by tests, counts a run's trace fsyncs.
	syncHook func()
	// project is the working directory's .kitsoki.yaml (read before any
	// command runs); library the story library shipped with kitsoki.
	project *project.Config
	library string
}

func (g *globals) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(strings.ToUpper(g.logLevel))); err != nil {
		lvl = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "kitsoki",
		Short:         "Run, validate and test YAML stories whose states call LLM agents",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			cfg, err := project.Load(".")
			if err != nil {
				return exitWith(exitUsage, err)
			}
			g.project, g.library = cfg, storyLibrary()
			return nil
		},
	}
	root.SetVersionTemplate(versionLine + "\n")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	root.AddCommand(newValidateCmd(g), newRunCmd(g), newVersionCmd())
	root.AddCommand(newFetchCmd(g), newMCPCmd(g))
	root.AddCommand(newTestCmd(g), newTraceCmd())
	root.AddCommand(newEvalCmd(g), newHostsCmd(g))
	root.AddCommand(newVizCmd(g))
	root.AddCommand(newSessionCmd(g))
	root.AddCommand(newWorkerCmd(g))
	root.AddCommand(newNewCmd(), newDocsCmd())
	root.AddCommand(newWebCmd(g))
	checkUsage(root)
	return root
}

// versionLine is what `kitsoki version` and `kitsoki --version` print
// (a cobra template: the root's Version is version.String()).
const versionLine = "kitsoki {{.Version}}"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kitsoki version",
		Long: `Print the kitsoki version, as --version does. A release build stamps it with
-ldflags "-X github.com/kitsoki/kitsoki/internal/base/version.stamped=<version>";
otherwise it is the module version the binary was built from, else "dev".`,
		Args: cobra.NoArgs,
		Run:  func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), "kitsoki", version.String()) },
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run whose commands end with ctx (a server's tests stop it).
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(stderr, ee.err)
		}
		return ee.code
	}
	if de, ok := errors.AsType[*driver.ExitError](err); ok {
		// The drivers' errors carry their codes (a busy session, a resume
		// refused); the text is printed as a flag error is.
		if de.Err != nil && de.Err.Error() != "" {
			fmt.Fprintln(stderr, de.Err)
		}
		return de.Code
	}
	fmt.Fprintln(stderr, "kitsoki:", err)
	return driver.CodeOf(err)
}
