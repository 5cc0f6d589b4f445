package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/check/intenttest"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// Exit codes of `kitsoki test intents`.
const (
	exitIntentsBelow = 1 // the accuracy is below --min-accuracy
	exitIntentsSetup = 2 // the story or the dataset did not load, or a cassette
)

type intentsOpts struct {
	dataset     string
	glob        string
	runs        int
	harness     string
	recording   string
	minAccuracy float64
	cassette    string
	record      string
	trace       string
	routing     routingFlags
}

func newIntentsCmd(g *globals) *cobra.Command {
	o := &intentsOpts{}
	cmd := &cobra.Command{
		Use:   "intents <app.yaml> [--dataset FILE]",
		Short: "Run the story's intents fixtures (intents/*.yaml), or route a dataset of utterances, through the story's routing tiers and router agent",
		Long: `Without --dataset, run the story's intents fixtures (Kitsoki's format,
<app dir>/intents/*.yaml with test_kind: intents): each fixture's inputs
are routed in the file's state, each runs times (defaults.runs, the
fixture's runs:, or --runs), and the fixture passes when at least
min_pass_rate of the runs give the expected intent and slots
(intent: {name, slots}), one of the expected rejections
(expect_failure: {any_of: [...]}, where clarify is MISSING_SLOTS or
CLARIFY), or an intent the state takes through its "*" arm
(expect_fallthrough: true). With --harness static (the default) no model
is asked: the tiers answer what they can, the recording (--recording,
else <app dir>/recording.yaml) answers as the router, and an input
neither answers is skipped; --harness live asks the router agent
(--cassette replays its answers). Exit 1 when a fixture fails.

With --dataset, route each utterance of an intents dataset, in its state, through the
story's free-text tiers (exact, synonyms and templates with
--semantic-routing, default_intent) and the router agent, and compare the
intent and slots with the expected ones:

  cases:
    - {state: desk, say: "show me the forecast for Tokyo", intent: forecast, slots: {city: Tokyo}}
    - {state: desk, say: "sing me a song", intent: none}

It prints each miss, then the accuracy per intent and overall with Wilson
95% intervals. --cassette replays the router's answers (offline);
--record writes them to a cassette.

Exit codes:
  0  the overall accuracy is at least --min-accuracy
  1  the overall accuracy is below --min-accuracy, or a fixture failed (the report is printed)
  2  the story, the dataset, the fixtures or the cassette did not load, or a usage error`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntents(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataset, "dataset", "", "route this dataset (a YAML file of cases: [{state, say, intent, slots}]) instead of the intents fixtures")
	f.StringVar(&o.glob, "intents", "", "glob of the intents fixtures (default: <app dir>/intents/*.yaml)")
	f.IntVar(&o.runs, "runs", 0, "route each fixture input this many times (default: the fixture's runs, else its file's defaults.runs, else 1)")
	f.StringVar(&o.harness, "harness", "", "static (no model: the tiers and the recording answer, other inputs are skipped) or live (the router agent answers); default static, live with --cassette or --record")
	f.StringVar(&o.recording, "recording", "", "the recording the static harness answers from (default: <app dir>/recording.yaml when it exists)")
	f.Float64Var(&o.minAccuracy, "min-accuracy", 0.8, "exit 1 when the overall accuracy is below this (0 to 1)")
	f.StringVar(&o.cassette, "cassette", "", "replay the router's answers from this cassette")
	f.StringVar(&o.record, "record", "", "run the real router and write its answers to this cassette")
	f.StringVar(&o.trace, "trace", "", "write the routing trace (agent calls, turn.routed) to this file")
	addRoutingFlags(cmd, &o.routing)
	addWorkspaceFlag(cmd, g)
	return cmd
}

func runIntents(cmd *cobra.Command, g *globals, o *intentsOpts, path string) (err error) {
	if o.dataset == "" {
		return runIntentFixtures(cmd, g, o, path)
	}
	if o.minAccuracy < 0 || o.minAccuracy > 1 {
		return exitWith(exitUsage, fmt.Errorf("--min-accuracy %v: want a number from 0 to 1", o.minAccuracy))
	}
	st, err := story.Load(path, g.storyOpts()...)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer func() { err = maskedExit(st.Secrets, err) }()
	stdout, stderr := redacting(cmd.OutOrStdout(), st.Secrets), redacting(cmd.ErrOrStderr(), st.Secrets)
	ds, err := intenttest.Load(o.dataset, st)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	routing, err := o.routing.config(cmd, st)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	as, err := setupAgents(&runOpts{cassette: o.cassette, record: o.record}, st)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer as.finish(stderr)
	cfg := runtime.Config{
		Logger:  g.logger(stderr),
		Trace:   runtime.Trace{Path: o.trace},
		Agents:  runtime.Agents{Live: true},
		Session: &runtime.Session{ID: newSessionID(), Routing: routing},
	}
	as.configure(&cfg)
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		return exitWith(exitIntentsSetup, err)
	}
	defer rt.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := intenttest.Run(ctx, rt.Session(), ds)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	as.replayCheck(stderr)
	if err := rep.Write(stdout, ds); err != nil {
		return exitWith(exitFailure, err)
	}
	if rep.Accuracy < o.minAccuracy {
		return exitWith(exitIntentsBelow, fmt.Errorf("kitsoki test intents: accuracy %.1f%% (%d/%d) is below --min-accuracy %.1f%%",
			100*rep.Accuracy, rep.Correct, rep.N, 100*o.minAccuracy))
	}
	return nil
}
