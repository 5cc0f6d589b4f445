package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/check/testrunner"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Exit codes of `kitsoki test flows` (cassettes-and-flows.md §6).
const (
	exitFlowsFailed = 1 // a flow failed
	exitFlowsSetup  = 2 // setup error: the story, a fixture or a cassette did not load
)

func newTestCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Test a story",
	}
	cmd.AddCommand(newFlowsCmd(g), newIntentsCmd(g))
	return cmd
}

type flowsOpts struct {
	flows    string
	json     string
	failFast bool
	verbose  bool
	traceOut string
	strict   bool
}

func newFlowsCmd(g *globals) *cobra.Command {
	o := &flowsOpts{}
	cmd := &cobra.Command{
		Use:   "flows <app.yaml>",
		Short: "Run a story's flow fixtures: scripted turns with assertions, agents replayed from cassettes",
		Long: `Run flow fixtures against a story.

Each fixture submits intents turn by turn and asserts on the state, the world,
the view and the host calls; agents and hosts answer from host_handlers stubs
or a host_cassette. Fixtures are <app dir>/flows/*.yaml when that directory
exists, else ./flows/*.yaml, else <app path without extension>-flows/*.yaml;
--flows picks others.

Exit codes:
  0  every flow passed
  1  a flow failed
  2  setup error (the story, a fixture or a cassette did not load), or a
     usage error (unknown flag, wrong arguments)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFlows(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	addWorkspaceFlag(cmd, g)
	f.StringVar(&o.flows, "flows", "", "glob of fixture files (default: see above)")
	f.StringVar(&o.json, "json", "", "also write the report as JSON to this file")
	f.BoolVar(&o.failFast, "fail-fast", false, "stop after the first failing flow")
	f.BoolVarP(&o.verbose, "v", "v", false, "show every turn, not only failing ones")
	f.BoolVar(&o.strict, "cassette-strict", false, "fail a call whose cassette episode was recorded for a different request (default: answer it and warn)")
	f.StringVar(&o.traceOut, "trace-out", "", "write the run's JSONL trace here (with several flows: one file per flow, named <file>.<flow>.jsonl)")
	return cmd
}

func setupErr(err error) error {
	return exitWith(exitFlowsSetup, fmt.Errorf("kitsoki test flows: %w", err))
}

func runFlows(cmd *cobra.Command, g *globals, o *flowsOpts, app string) error {
	stdout := cmd.OutOrStdout()
	if err := storyFileErr(app); err != nil {
		return setupErr(err)
	}
	files, app, err := testrunner.FixtureFiles(app, o.flows)
	if err != nil {
		return setupErr(err)
	}
	opts := []testrunner.FlowOption{testrunner.WithFlowLogger(g.logger(cmd.ErrOrStderr())), testrunner.WithCassetteStrict(o.strict)}
	if o.json != "" {
		opts = append(opts, testrunner.WithEvents())
	} else {
		// Each result is printed as it comes; without --json the report
		// is read for its summary only.
		opts = append(opts, testrunner.WithSummaryReport())
	}
	if o.traceOut != "" {
		opts = append(opts, testrunner.WithTrace())
	}
	opts = append(opts, testrunner.WithFlowWorkspace(g.workspace), testrunner.WithStoriesPath(g.storiesPath...))
	r := testrunner.NewRunner(opts...)
	defer r.Close()
	// Each fixture file is parsed when its flows run (RunFiles): a story
	// with many flows holds one file's fixtures at a time, which lowers
	// the run's peak memory (docs/performance.md, "Peak memory").
	rep, err := r.RunFiles(cmd.Context(), app, files, o.failFast, func(res *testrunner.FlowResult) {
		testrunner.WriteResult(stdout, res, o.verbose)
	})
	if err != nil {
		return setupErr(err)
	}
	rep.WriteSummary(stdout)
	if o.json != "" {
		if err := rep.WriteJSON(o.json); err != nil {
			return setupErr(fmt.Errorf("--json: %w", err))
		}
	}
	if o.traceOut != "" {
		if err := writeFlowTraces(o.traceOut, rep); err != nil {
			return setupErr(fmt.Errorf("--trace-out: %w", err))
		}
	}
	// A fixture that could not run is reported with the others, and the
	// run still exits as a setup error, naming the first.
	if errs := rep.SetupErrors(); len(errs) > 0 {
		msg := errs[0]
		switch n := len(errs) - 1; {
		case n == 1:
			msg += " (and 1 more fixture that could not run: see the report)"
		case n > 1:
			msg += fmt.Sprintf(" (and %d more fixtures that could not run: see the report)", n)
		}
		return setupErr(errors.New(msg))
	}
	if !rep.OK() {
		return exitWith(exitFlowsFailed, errors.New(""))
	}
	return nil
}

// writeFlowTraces writes each flow's trace and the sidecars it refers to
// (transcripts/ beside it). One flow's trace goes to path itself; with
// several, flow "x.yaml" (or "x.yaml#2") goes to <path without
// .jsonl>.x.jsonl (or .x.2.jsonl), since one trace file holds one session.
func writeFlowTraces(path string, rep *testrunner.Report) error {
	var ran []*testrunner.FlowResult
	for _, res := range rep.Results {
		if res.Trace != nil {
			ran = append(ran, res)
		}
	}
	dir := filepath.Dir(path)
	if err := outfile.MkdirAll(dir); err != nil {
		return err
	}
	side := flowSidecars{dir: dir, by: map[string]trace.Sidecar{}}
	if len(ran) == 1 {
		if err := side.write(ran[0]); err != nil {
			return err
		}
		return outfile.WriteFile(path, ran[0].Trace)
	}
	base := strings.TrimSuffix(path, ".jsonl")
	for _, res := range ran {
		name := strings.TrimSuffix(filepath.Base(res.File), filepath.Ext(res.File))
		if _, n, ok := strings.Cut(res.Name, "#"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				name += "." + n
			}
		}
		if err := side.write(res); err != nil {
			return err
		}
		if err := outfile.WriteFile(base+"."+name+".jsonl", res.Trace); err != nil {
			return err
		}
	}
	return nil
}

// flowSidecars writes the sidecars of the flows' traces into their shared
// directory. Two flows may write the same file only with the same bytes
// (the same recorded transcript under the same call_id).
type flowSidecars struct {
	dir string
	by  map[string]trace.Sidecar // sidecar path → the flow (Path) that wrote it, and its bytes
}

func (s flowSidecars) write(res *testrunner.FlowResult) error {
	for _, sc := range res.Sidecars {
		p := filepath.Join(s.dir, filepath.FromSlash(sc.Path))
		if other, ok := s.by[sc.Path]; ok {
			if bytes.Equal(other.Data, sc.Data) {
				continue
			}
			return fmt.Errorf("%s: flows %s and %s write different transcripts under the same call_id (their cassettes share an app_id and episode id); write each flow's trace to its own directory, or give the episodes distinct ids",
				p, other.Path, res.Name)
		}
		if err := outfile.MkdirAll(filepath.Dir(p)); err != nil {
			return err
		}
		if err := outfile.WriteFile(p, sc.Data); err != nil {
			return err
		}
		s.by[sc.Path] = trace.Sidecar{Path: res.Name, Data: sc.Data}
	}
	return nil
}
