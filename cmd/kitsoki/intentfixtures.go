package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/check/intenttest"
	"github.com/kitsoki/kitsoki/internal/check/testrunner"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// runIntentFixtures is `kitsoki test intents app.yaml` without --dataset:
// the story's intents fixtures.
func runIntentFixtures(cmd *cobra.Command, g *globals, o *intentsOpts, path string) (err error) {
	static, err := o.static()
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if o.runs < 0 {
		return exitWith(exitUsage, fmt.Errorf("--runs %d: want a whole number of at least 1", o.runs))
	}
	st, err := story.Load(path, g.storyOpts()...)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer func() { err = maskedExit(st.Secrets, err) }()
	stdout, stderr := redacting(cmd.OutOrStdout(), st.Secrets), redacting(cmd.ErrOrStderr(), st.Secrets)
	names, err := intenttest.FixtureFiles(path, o.glob)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	var files []*intenttest.FixtureFile
	for _, name := range names {
		ffs, err := intenttest.LoadFixtures(name, st)
		if err != nil {
			return exitWith(exitIntentsSetup, err)
		}
		files = append(files, ffs...)
	}
	if len(files) == 0 {
		return exitWith(exitIntentsSetup, fmt.Errorf("no intents fixtures (documents with test_kind: intents) in %s; write some, or pass --dataset FILE", strings.Join(names, ", ")))
	}
	routing, err := o.routing.config(cmd, st)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	routing.SemanticDefault = true // a test, as Kitsoki's: routing.enabled defaults on
	if static {
		rec, err := o.staticRecording(path)
		if err != nil {
			return exitWith(exitIntentsSetup, err)
		}
		routing.Recording = rec
	}
	as, err := setupAgents(&runOpts{cassette: o.cassette, record: o.record}, st)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer as.finish(stderr)
	cfg := runtime.Config{Logger: g.logger(stderr), Trace: runtime.Trace{Path: o.trace}, Agents: runtime.Agents{Live: !static},
		Session: &runtime.Session{ID: newSessionID(), Routing: routing}}
	as.configure(&cfg)
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer rt.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := intenttest.RunFixtures(ctx, rt.Session(), files, intenttest.FixtureOptions{Runs: o.runs, Static: static})
	if err != nil {
		return exitWith(exitFailure, err)
	}
	as.replayCheck(stderr)
	if err := rep.Write(stdout); err != nil {
		return exitWith(exitFailure, err)
	}
	if rep.Failed > 0 {
		return exitWith(exitIntentsBelow, fmt.Errorf("kitsoki test intents: %d of %d fixtures failed", rep.Failed, rep.Passed+rep.Failed))
	}
	return nil
}

// static reports whether the fixtures run without a model.
func (o *intentsOpts) static() (bool, error) {
	switch o.harness {
	case "":
		return o.cassette == "" && o.record == "", nil
	case "static":
		if o.cassette != "" || o.record != "" {
			return false, fmt.Errorf("--harness static asks no model: drop --cassette/--record, or use --harness live")
		}
		return true, nil
	case "live":
		return false, nil
	}
	return false, fmt.Errorf("--harness %q: want static or live", o.harness)
}

// staticRecording is the recording the static harness answers from:
// --recording, else <app dir>/recording.yaml, else an empty one.
func (o *intentsOpts) staticRecording(appPath string) (*testrunner.Recording, error) {
	p := o.recording
	if p == "" {
		p = filepath.Join(filepath.Dir(story.RootFile(appPath)), "recording.yaml")
		if _, err := os.Stat(p); err != nil {
			return &testrunner.Recording{File: "(none: no recording.yaml beside the story)"}, nil
		}
	}
	return testrunner.LoadRecording(p)
}
