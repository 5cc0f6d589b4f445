package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/spf13/cobra"
)

// errEvalInvalid is the failure of a dataset with validation errors.
var errEvalInvalid = errors.New("eval validation failed")

// exitEvalNoPass is the exit code of a live eval run (or a replay) in
// which no candidate passed the adherence bar: the report is written, but
// there is nothing to pin, and a CI step must not pass.
const exitEvalNoPass = 7

func newEvalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure which model answers a bounded agent decision, and keep the evidence",
		Long: `Agent evals benchmark one host.agent.* call site (an invoke with an id:)
against a dataset of examples (<story>/evals/*.yaml, kind: agent_eval), and
write reports under <story>/evals/reports/<call>/ that an invoke's
selection: pin cites as evidence. See docs/evals.md.`,
	}
	cmd.PersistentFlags().StringVar(&g.workspace, "workspace", "", workspaceUsage)
	cmd.AddCommand(newEvalListCmd(g), newEvalShowCmd(g), newEvalRunCmd(g))
	return cmd
}

func newEvalListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list <story-dir|eval.yaml>",
		Short: "List eval datasets with their status",
		Long: `List eval datasets: a story directory (or its app.yaml) means
<dir>/evals/*.yaml. Under a header, one line per dataset: call, status
(unmeasured, stale, passing, failing or invalid), comparator, pin
(profile/model, "-" for none) and path, in aligned columns; --json prints
the same as a JSON array.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := datasetPaths(args[0])
			if err != nil {
				return exitWith(exitFailure, err)
			}
			type row struct {
				Call       string `json:"call"`
				Status     string `json:"status"`
				Comparator string `json:"comparator"`
				Pin        string `json:"pin,omitempty"`
				Path       string `json:"path"`
			}
			rows := []row{}
			for _, p := range paths {
				c, err := eval.Check(p, eval.WithWorkspace(g.workspace))
				if err != nil {
					return exitWith(exitFailure, err)
				}
				status, _ := c.Status()
				c.Close()
				rows = append(rows, row{Call: c.Dataset.Call, Status: status, Comparator: c.Dataset.Comparator.Kind,
					Pin: c.Dataset.Selection.Pinned.Label(), Path: p})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(out, "%s: no eval datasets (evals/*.yaml; see docs/evals.md)\n", args[0])
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CALL\tSTATUS\tCOMPARATOR\tPIN\tPATH")
			for _, r := range rows {
				pin := r.Pin
				if pin == "" {
					pin = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Call, r.Status, r.Comparator, pin, r.Path)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// datasetPaths expands a list argument: a directory's evals/*.yaml, sorted,
// or the file itself; a story's root file (app.yaml) means its directory.
func datasetPaths(arg string) ([]string, error) {
	fi, err := os.Stat(arg)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("kitsoki eval list: %s: no such story directory or eval dataset", arg)
	}
	if err != nil {
		return nil, fmt.Errorf("kitsoki eval list: %w", err)
	}
	if !fi.IsDir() && filepath.Base(arg) != story.RootFileName {
		return []string{arg}, nil
	}
	if !fi.IsDir() {
		arg = filepath.Dir(arg)
	}
	paths, err := filepath.Glob(filepath.Join(arg, "evals", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

func newEvalShowCmd(g *globals) *cobra.Command {
	var asJSON, md, html bool
	cmd := &cobra.Command{
		Use:   "show <eval.yaml|report.json>",
		Short: "Show a dataset's call site and status, or a report's candidates",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if html {
				if asJSON || md {
					return exitWith(exitUsage, fmt.Errorf("kitsoki eval show: --html prints a page: give it without --json or --md"))
				}
				return showReportHTML(out, args[0])
			}
			if strings.HasSuffix(args[0], ".json") {
				return showReport(out, args[0], asJSON, md)
			}
			return showDataset(out, args[0], asJSON, g.workspace)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&md, "md", false, "print a report as a Markdown table")
	cmd.Flags().BoolVar(&html, "html", false, "print a report as a self-contained HTML page: the candidate × example matrix")
	return cmd
}

func showReport(out io.Writer, path string, asJSON, md bool) error {
	r, err := eval.ReadReport(path)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	switch {
	case asJSON:
		b, err := os.ReadFile(path)
		if err != nil {
			return exitWith(exitFailure, err)
		}
		_, err = out.Write(b)
		return err
	case md:
		_, err := io.WriteString(out, eval.Markdown(r))
		return err
	}
	fmt.Fprintf(out, "eval: %s\ncall: %s\nstatus candidates: %d\n", r.Eval, r.Call, len(r.Candidates))
	for _, c := range r.Candidates {
		fmt.Fprintln(out, candidateLine(&c))
	}
	return nil
}

// candidateLine is "- <profile>/<model> effort=<e> pass|fail
// pass_rate=<rate> cost=<avg> p95=<n>ms".
func candidateLine(c *eval.Candidate) string {
	verdict := "fail"
	if c.Pass {
		verdict = "pass"
	}
	return fmt.Sprintf("- %s/%s effort=%s %s pass_rate=%.2f cost=%.6f p95=%dms",
		c.Profile, c.Model, c.Effort, verdict, c.ComparatorPassRate, c.AvgCostUSD, c.P95LatencyMS)
}

func showDataset(out io.Writer, path string, asJSON bool, ws string) error {
	c, err := eval.Check(path, eval.WithWorkspace(ws))
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer c.Close()
	status, serr := c.Status()
	if serr != nil {
		c.Errors = append(c.Errors, serr.Error())
	}
	_, latest, _ := c.Latest()
	if asJSON {
		v := struct {
			Dataset      string         `json:"dataset"`
			Call         *eval.CallSite `json:"call"`
			Errors       []string       `json:"errors"`
			Warnings     []string       `json:"warnings"`
			LatestReport *eval.Report   `json:"latest_report"`
		}{path, c.Site, nonNil(c.Errors), nonNil(c.Warnings), latest}
		if err := writeJSON(out, v); err != nil {
			return err
		}
	} else {
		var handler, state, schema string
		if c.Site != nil {
			handler, state, schema = c.Site.Handler, c.Site.StatePath, c.Site.SchemaPath
		}
		fmt.Fprintf(out, "call: %s\nhandler: %s\nstate: %s\nschema: %s\ncomparator: %s\nstatus: %s\n",
			c.Dataset.Call, handler, state, schema, c.Dataset.Comparator.Kind, status)
		printFindings(out, c)
	}
	if !c.OK() {
		return exitWith(exitFailure, errEvalInvalid)
	}
	return nil
}

func printFindings(out io.Writer, c *eval.Checked) {
	for _, w := range c.Warnings {
		fmt.Fprintln(out, "WARN:", w)
	}
	for _, e := range c.Errors {
		fmt.Fprintln(out, "ERROR:", e)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type evalRunOpts struct {
	live      bool
	asJSON    bool
	md        bool
	parallel  int
	deadline  time.Duration
	strict    bool
	cassette  string
	record    string
	reportDir string
	pinnedBy  string
	// af measures one profile or agent instead of the matrix's, and caps
	// the run's cost.
	af agentFlags
}

func newEvalRunCmd(g *globals) *cobra.Command {
	o := &evalRunOpts{}
	cmd := &cobra.Command{
		Use:   "run <eval.yaml>",
		Short: "Validate a dataset, or run its matrix live and write a report",
		Long: `Validate a dataset offline (the default), or with --live run its matrix:
every candidate (profile × model × effort) answers every example repeat
times through the same dispatch path a story uses, and the report is
written to <dataset dir>/reports/<call>/<timestamp>.json and latest.json.

--cassette FILE replays recorded answers instead of calling agents (so an
eval is reproducible in CI); --record FILE keeps the live answers as such a
cassette. Both imply --live.

Exit codes: 0 the dataset is valid (and, for a live run or a replay, a
candidate passed the bar); 1 the dataset is invalid or the run failed;
2 usage error; 7 a live run or replay in which no candidate passed the
adherence bar (the report is still written).

Progress goes to stderr: a bar on a terminal, one line per call otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.live, "live", false, "run the matrix against the agents and write a report")
	f.BoolVar(&o.asJSON, "json", false, "print JSON (the report, for a live run)")
	f.BoolVar(&o.md, "md", false, "print the report as a Markdown table")
	f.IntVar(&o.parallel, "parallel", eval.DefaultParallel, "how many calls run at once")
	f.DurationVar(&o.deadline, "timeout", eval.DefaultCallDeadline, "hard deadline of each call")
	f.BoolVar(&o.strict, "strict", false, "apply the pass-rate bar to the Wilson 95% lower bound instead of the point estimate")
	f.StringVar(&o.cassette, "cassette", "", "replay answers from this eval cassette instead of calling agents")
	f.StringVar(&o.record, "record", "", "write the live answers to this eval cassette")
	f.StringVar(&o.reportDir, "report-dir", "", "write the report here instead of <dataset dir>/reports/<call>")
	f.StringVar(&o.pinnedBy, "pinned-by", "", "record who pins the decision (sets decision.pinned_by and pinned_at)")
	f.StringVar(&o.af.profile, "profile", "", "measure this .kitsoki.yaml profile instead of the matrix's profiles")
	f.StringVar(&o.af.agent, "agent", "", "measure this agent_plugins alias, or a backend on its defaults (anthropic, openai, codex, copilot), instead of the matrix's profiles")
	f.Float64Var(&o.af.maxCost, "max-cost", 0, "stop the run once its calls have cost this many US dollars (0: no cap)")
	return cmd
}

func runEval(cmd *cobra.Command, g *globals, o *evalRunOpts, path string) (err error) {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	c, err := eval.Check(path, eval.WithWorkspace(g.workspace))
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer c.Close()
	budget, err := o.af.evalPlan(g, c)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Story != nil { // what the run prints, logs and errors included, is masked
		out, stderr = redacting(out, c.Story.Secrets), redacting(stderr, c.Story.Secrets)
		defer func() { err = maskedExit(c.Story.Secrets, err) }()
	}
	if err := printEvalCheck(out, stderr, c); err != nil {
		return err
	}
	if o.cassette != "" && o.record != "" {
		return exitWith(exitFailure, errors.New("--cassette and --record cannot be combined: record a live run, then replay it"))
	}
	if !o.live && o.cassette == "" && o.record == "" {
		return printOfflineEval(out, o, c)
	}

	logger := g.logger(stderr)
	ro := eval.Options{Parallel: o.parallel, CallDeadline: o.deadline, Strict: o.strict, PinnedBy: o.pinnedBy, Logger: logger,
		Progress: eval.NewProgress(stderr, isTerminal(stderrFile(cmd))), Budget: budget}
	release, err := evalAnswers(&ro, o, c, logger)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	defer release()
	dir := o.reportDir
	if dir == "" {
		dir = c.Dataset.ReportsDir()
	}
	ro.ReportsDir = dir
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := eval.Run(ctx, c, ro)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if ro.Record != nil {
		if err := ro.Record.WriteFile(c.Story, o.record); err != nil {
			return exitWith(exitFailure, err)
		}
		fmt.Fprintf(stderr, "kitsoki: recorded the answers to %s\n", o.record)
	}
	written, err := eval.WriteReport(dir, r)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if err := printEvalReport(out, stderr, o, c, r, written); err != nil {
		return exitWith(exitFailure, err)
	}
	if !anyPassed(r) {
		return exitWith(exitEvalNoPass, fmt.Errorf("kitsoki eval run: no candidate of %d passed the adherence bar of call %s (report %s)", len(r.Candidates), r.Call, written))
	}
	return nil
}

// printEvalCheck prints the dataset check's warnings to stderr and, when
// it failed, its errors to out. Run's stdout is the ERROR lines on failure
// and the OK lines (or the report) on success (eval-format.md §7).
func printEvalCheck(out, stderr io.Writer, c *eval.Checked) error {
	for _, w := range c.Warnings {
		fmt.Fprintln(stderr, "WARN:", w)
	}
	if !c.OK() {
		for _, e := range c.Errors {
			fmt.Fprintln(out, "ERROR:", e)
		}
		return exitWith(exitFailure, errEvalInvalid)
	}
	return nil
}

// printOfflineEval prints the result of an offline run: the dataset's
// contract holds, and no agent was called.
func printOfflineEval(out io.Writer, o *evalRunOpts, c *eval.Checked) error {
	if o.asJSON {
		return writeJSON(out, struct {
			OK   bool           `json:"ok"`
			Mode string         `json:"mode"`
			Call *eval.CallSite `json:"call"`
		}{true, "offline", c.Site})
	}
	fmt.Fprintf(out, "OK offline eval contract: %s (%s)\n", c.Site.Call, c.Site.Handler)
	fmt.Fprintln(out, "live benchmark not run; pass --live to use provider-backed harness profiles")
	return nil
}

// evalAnswers sets where the run's answers come from: the --cassette
// replay, else the live agents (recorded with --record). release closes
// the live agents and their local model servers.
func evalAnswers(ro *eval.Options, o *evalRunOpts, c *eval.Checked, logger *slog.Logger) (release func(), err error) {
	if o.cassette != "" {
		rp, err := eval.LoadReplay(o.cassette)
		if err != nil {
			return nil, err
		}
		ro.Replay = rp
		return func() {}, nil
	}
	models := localllm.NewPool() // one server per local model for every candidate
	reg := runtime.LiveRegistry(c.Story, logger, models)
	builtin := runtime.LiveBuiltin(c.Story, logger)
	ro.Registry, ro.Builtin = reg, builtin
	if o.record != "" {
		ro.Record = eval.NewRecording()
	}
	return func() {
		builtin.Close()
		reg.Close()
		models.Close()
	}, nil
}

// printEvalReport prints the run's report as the flags ask: JSON,
// Markdown, or a summary line per candidate and the decision.
func printEvalReport(out, stderr io.Writer, o *evalRunOpts, c *eval.Checked, r *eval.Report, written string) error {
	switch {
	case o.asJSON:
		b, err := r.Encode()
		if err != nil {
			return err
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report: %s\n", written)
	case o.md:
		io.WriteString(out, eval.Markdown(r))
		fmt.Fprintf(stderr, "report: %s\n", written)
	default:
		fmt.Fprintf(out, "eval %s: call %s (%s), %s run, status %s\n", r.Eval, r.Call, c.Site.Handler, r.Run.Mode, eval.Status(r, c.CurrentHashes()))
		for _, cand := range r.Candidates {
			fmt.Fprintln(out, candidateLine(&cand))
		}
		if d := r.Decision; d != nil && d.SelectedProfile != "" {
			fmt.Fprintf(out, "decision: %s -> %s/%s effort=%s\n", d.Strategy, d.SelectedProfile, d.SelectedModel, d.SelectedEffort)
		} else {
			fmt.Fprintf(out, "decision: %s -> none (no candidate passed the adherence bar)\n", r.Decision.Strategy)
		}
		fmt.Fprintf(out, "report: %s\n", written)
	}
	return nil
}

// anyPassed reports whether a candidate of the run passed the bar.
func anyPassed(r *eval.Report) bool {
	for i := range r.Candidates {
		if r.Candidates[i].Pass {
			return true
		}
	}
	return false
}

// stderrFile is the command's stderr as a file, for the terminal check.
func stderrFile(cmd *cobra.Command) io.Reader {
	if f, ok := cmd.ErrOrStderr().(*os.File); ok {
		return f
	}
	return nil
}

// applyPins resolves the story's selection: pins into host routes. Pins
// that are not honoured are printed as warnings, or with strict returned
// as a load error.
func applyPins(st *story.Story, stderr io.Writer, strict bool) (map[*story.Invoke]*host.Route, error) {
	pins := routes.Resolve(st)
	if strict {
		if err := pins.Err(); err != nil {
			return nil, err
		}
	}
	for _, w := range pins.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return pins.Routes, nil
}
