package eval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// ErrInvalid is returned by Run for a dataset with validation errors.
var ErrInvalid = errors.New("eval validation failed")

// Defaults of a live run.
const (
	DefaultParallel     = 4
	DefaultCallDeadline = 2 * time.Minute
)

// Options configures a live run.
type Options struct {
	// Registry resolves the story's agent aliases: configured with the
	// story's declarations, the transports, and any in-process agents.
	// Unused (may be nil) when Replay is set.
	Registry *agent.Registry
	// Builtin answers calls routed to the built-in claude path (profile
	// "claude" or a provider); nil when this build has none.
	Builtin agent.Agent
	// Replay answers every call from a cassette instead of the agents.
	Replay *Replay
	// Record keeps every live exchange, to be written as a cassette.
	Record *Recording
	// Parallel is how many calls run at once (default DefaultParallel).
	Parallel int
	// CallDeadline is the hard deadline of each call (default
	// DefaultCallDeadline).
	CallDeadline time.Duration
	// Strict applies the pass-rate bar to the Wilson lower bound instead
	// of the point estimate.
	Strict bool
	// ReportsDir is where the report will be written, for the decision's
	// evidence path (default: the dataset's reports/<call>/).
	ReportsDir string
	// PinnedBy, when set, is recorded in the decision with pinned_at.
	PinnedBy string
	// Now is the report's generated_at (default: Clock.Now()).
	Now time.Time
	// Budget is the run's spending cap (--max-cost), shared by every
	// candidate: once it is reached the run stops with its error.
	Budget *agent.Budget
	// Clock measures call durations (default the system clock).
	Clock    clock.Clock
	Logger   *slog.Logger
	Progress Progress
}

// Strategies of selection.strategy.
const (
	StrategyCheapestPassing = "cheapest_passing"
	StrategyBestPassRate    = "best_pass_rate"
)

// job is one call of the run: candidate × example × repeat.
type job struct {
	cand, ex, rep int
	turn          int64 // the call's turn number, unique in the run
}

// callResult is what one call produced.
type callResult struct {
	job
	submission any
	// valid: the candidate itself returned a schema-valid answer.
	valid bool
	// conformant: no contract violation (crash, transport, deadline,
	// sub-event rules).
	conformant bool
	fallback   bool
	retried    bool
	errKind    string
	latencyMS  int64
	cost       float64
	hasCost    bool
	tokens     int64
	hasTokens  bool
	outcome    Outcome
	// stop is the cost cap that stopped the run at this call.
	stop error
}

// plan is everything a run needs, resolved before the first call.
type plan struct {
	c       *Checked
	cands   []*candidate
	with    map[string]any // the call site's with:, rendered, minus args
	hasArgs bool           // the call site has a with.args block
	repeat  int
	strat   string
	world   map[string]any
}

// Run measures every candidate of the dataset's matrix on every example,
// repeat times, and returns the report (not yet written). The calls go
// through the host exactly as a story's would: prompt rendered from the
// example's args, the call site's persona and schema, the host's
// validation and fallback rules.
func Run(ctx context.Context, c *Checked, o Options) (*Report, error) {
	if !c.OK() {
		return nil, ErrInvalid
	}
	o.defaults()
	p, err := newPlan(c)
	if err != nil {
		return nil, err
	}
	if o.Replay == nil && o.Registry == nil {
		return nil, errors.New("eval run: no agent registry (and no cassette to replay)")
	}
	results, err := p.execute(ctx, &o)
	if err != nil {
		return nil, err
	}
	if o.Replay != nil {
		if err := o.Replay.misses(); err != nil {
			return nil, err
		}
	}
	return p.report(results, &o), nil
}

func (o *Options) defaults() {
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.CallDeadline <= 0 {
		o.CallDeadline = DefaultCallDeadline
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now.IsZero() {
		o.Now = o.Clock.Now()
	}
}

// newPlan checks what a live run needs beyond offline validity and
// resolves candidates and the call's with: block.
func newPlan(c *Checked) (*plan, error) {
	d := c.Dataset
	var errs []string
	if len(d.Matrix.Profiles) == 0 {
		errs = append(errs, "matrix.profiles is required for a live run (the profiles to measure)")
	}
	repeat := d.Matrix.Repeat
	if repeat < 0 {
		errs = append(errs, fmt.Sprintf("matrix.repeat must be at least 1, got %d", repeat))
	}
	if repeat == 0 {
		repeat = 1
	}
	if r := d.Task.AdherenceBar.MinPassRate; r <= 0 || r > 1 {
		errs = append(errs, fmt.Sprintf("task.adherence_bar.min_pass_rate must be in (0, 1] for a live run, got %v", r))
	}
	if d.Comparator.Kind == CompareJudge {
		errs = append(errs, "the judge comparator has no deterministic result, so a live run cannot score it; use exact, field_subset, enum or artifact_diff")
	}
	strat := d.Selection.Strategy
	if strat == "" {
		strat = StrategyCheapestPassing
	}
	if strat != StrategyCheapestPassing && strat != StrategyBestPassRate {
		errs = append(errs, fmt.Sprintf("unsupported selection.strategy %q (supported: %s, %s)", strat, StrategyCheapestPassing, StrategyBestPassRate))
	}
	if !strings.HasPrefix(c.Site.Handler, host.AgentNamespace) {
		errs = append(errs, fmt.Sprintf("call site %q is %s, not a host.agent.* call", c.Site.Call, c.Site.Handler))
	}
	cands, err := expandMatrix(c.Story, c.Site, d.Matrix)
	if err != nil {
		errs = append(errs, err.Error())
	}
	with, hasArgs, err := renderWith(c.Story, c.Site)
	if err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("eval run %s: %s", d.Path, strings.Join(errs, "; "))
	}
	return &plan{c: c, cands: cands, with: with, hasArgs: hasArgs, repeat: repeat, strat: strat,
		world: orchestrator.InitialWorld(c.Story)}, nil
}

// renderWith renders the call site's with: block, except args (which
// each example supplies), the way a session would at the start of a run:
// against the story's default world and no slots. The invoke's id goes in
// as "call", as the orchestrator adds it.
func renderWith(st *story.Story, site *CallSite) (map[string]any, bool, error) {
	env := expr.Env{
		"world": orchestrator.InitialWorld(st),
		"slots": map[string]any{},
		"event": map[string]any{"intent": "", "slots": map[string]any{}},
		"run":   map[string]any{"id": "eval", "turn": int64(0)},
	}
	out := map[string]any{}
	_, hasArgs := site.With["args"]
	for _, k := range sortedKeys(site.With) {
		if k == "args" {
			continue
		}
		t, err := expr.CompileTree(site.With[k])
		if err != nil {
			return nil, false, fmt.Errorf("call site %q: with.%s: %w", site.Call, k, err)
		}
		v, err := t.Eval(env)
		if err != nil {
			return nil, false, fmt.Errorf("call site %q: with.%s cannot be rendered outside a session (%v); evals render with: against the story's default world, so give it a literal value", site.Call, k, err)
		}
		out[k] = v
	}
	if site.Call != "" {
		out["call"] = site.Call
	}
	return out, hasArgs, nil
}

// args builds the with-map of one call: the rendered call-site with: plus
// the example's args (as with.args when the call site has an args block,
// else merged at the top level, where the prompt reads them).
func (p *plan) args(ex *Example) map[string]any {
	out := orchestrator.DeepCopy(p.with).(map[string]any)
	exArgs, _ := orchestrator.DeepCopy(ex.Args).(map[string]any)
	if exArgs == nil {
		exArgs = map[string]any{}
	}
	if p.hasArgs {
		out["args"] = exArgs
		return out
	}
	for k, v := range exArgs {
		out[k] = v
	}
	return out
}

// execute runs every job, at most o.Parallel at a time, and returns the
// results in job order.
func (p *plan) execute(ctx context.Context, o *Options) ([]*callResult, error) {
	d := p.c.Dataset
	sink := newCallSink(o.Clock)
	hosts := make([]*host.Host, len(p.cands))
	var rts []*runtime.Runtime
	defer func() {
		for _, rt := range rts {
			rt.Close()
		}
	}()
	for i, c := range p.cands {
		agents, err := p.agentsFor(c, o)
		if err != nil {
			return nil, err
		}
		// A candidate is a host with the candidate's route, dispatched to
		// directly: no session, no pins.
		rt, err := runtime.Open(p.c.Story, runtime.Config{
			Logger: o.Logger, Clock: o.Clock, Timeout: o.CallDeadline,
			Trace:  runtime.Trace{Sink: sink},
			Agents: agents, Budget: o.Budget,
			Routes: map[*story.Invoke]*host.Route{p.c.Site.Invoke: c.route},
		})
		if err != nil {
			return nil, err
		}
		rts = append(rts, rt)
		hosts[i] = rt.Host()
	}

	var jobs []job
	for ci := range p.cands {
		for ei := range d.Examples {
			for r := 0; r < p.repeat; r++ {
				jobs = append(jobs, job{cand: ci, ex: ei, rep: r, turn: int64(len(jobs) + 1)})
			}
		}
	}
	if o.Progress != nil {
		o.Progress.Start(len(jobs))
		defer o.Progress.Finish()
	}
	results := make([]*callResult, len(jobs))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	for i := range jobs {
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
			wg.Wait()
			return nil, runStopped(ctx, runCtx)
		}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			j := jobs[i]
			r := p.call(runCtx, hosts[j.cand], sink, j, o)
			results[i] = r
			if r.stop != nil {
				stopRun(r.stop) // a cost cap: no call goes out any more
			}
			if o.Progress != nil {
				o.Progress.Done(CallReport{Candidate: p.cands[j.cand].Label(), Example: d.Examples[j.ex].Name,
					Repeat: j.rep + 1, Pass: r.outcome.Pass, Reason: r.outcome.Reason})
			}
		}(i)
	}
	wg.Wait()
	if runCtx.Err() != nil {
		return nil, runStopped(ctx, runCtx)
	}
	return results, nil
}

// runStopped is the error of a run that ended before its last call: the
// cost cap that stopped it, else the interruption.
func runStopped(ctx, runCtx context.Context) error {
	var cap *agent.CostCapError
	if cause := context.Cause(runCtx); errors.As(cause, &cap) {
		return fmt.Errorf("eval run stopped, no report written: %w", cap)
	}
	return fmt.Errorf("eval run interrupted: %w", ctx.Err())
}

// call dispatches one example to one candidate and scores the answer.
func (p *plan) call(ctx context.Context, h *host.Host, sink *callSink, j job, o *Options) *callResult {
	d := p.c.Dataset
	ex := &d.Examples[j.ex]
	world := make(map[string]any, len(p.world))
	for k, v := range p.world {
		world[k] = v
	}
	args := p.args(ex)
	if o.Record != nil {
		o.Record.expect(j.turn, p.episodeID(j), p.matchKeys(ex, args))
	}
	cctx, cancel := clock.WithTimeout(ctx, o.Clock, o.CallDeadline)
	start := o.Clock.Now()
	res, err := h.Dispatch(cctx, &host.Call{Namespace: p.c.Site.Handler, Args: args, Invoke: p.c.Site.Invoke,
		SessionID: "eval-" + d.Name(), Turn: j.turn, State: p.c.Site.StatePath, World: world})
	elapsed := o.Clock.Now().Sub(start).Milliseconds()
	cancel()
	evs := sink.take(j.turn)

	r := &callResult{job: j, latencyMS: elapsed}
	dur, subst, closed := closingPayload(evs)
	if closed {
		r.latencyMS = dur
	}
	r.fallback = subst != nil
	var meta map[string]any
	if res != nil {
		meta, _ = res.Data["meta"].(map[string]any)
	}
	r.readMeta(meta)
	if o.Replay != nil {
		// A replayed call takes exactly the recorded duration, so a replay
		// reproduces the report byte for byte.
		r.latencyMS, _ = number.Int(meta["duration_ms"])
	}

	if err == nil && res == nil {
		err = errors.New("the host returned no result")
	}
	var cap *agent.CostCapError
	switch {
	case errors.As(err, &cap):
		r.errKind, r.stop = "cost_cap", cap
		r.outcome = Outcome{Reason: err.Error()}
	case err != nil:
		r.errKind = "dispatch_error"
		r.outcome = Outcome{Reason: err.Error()}
	case res.Err != nil:
		r.errKind = "error"
		if ae, ok := agent.AsAskError(res.Err); ok {
			r.errKind = string(ae.Kind)
		}
		r.conformant = r.errKind == string(agent.KindSchemaInvalid)
		r.outcome = Outcome{Reason: res.Err.Error()}
	case r.fallback:
		r.conformant = true
		r.outcome = Outcome{Reason: fmt.Sprintf("schema_invalid answer; the fallback %v answered instead", subst.FallbackPlugin)}
		r.submission = res.Data["submitted"]
	default:
		r.conformant, r.valid = true, true
		r.submission = res.Data["submitted"]
		r.outcome = Compare(d.Comparator, ex.Expect, r.submission)
	}
	return r
}

// closingPayload reads the call's agent.call.complete or agent.call.error
// event: its duration and substitution; closed is false when the call
// never got that far.
func closingPayload(evs []callEvent) (durationMS int64, subst *trace.Substitution, closed bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		switch p := evs[i].payload.(type) {
		case trace.AgentCallComplete:
			return p.DurationMS, p.Substitution, true
		case trace.AgentCallError:
			return p.DurationMS, p.Substitution, true
		}
	}
	return 0, nil, false
}

// readMeta takes retry, cost, token and (for replayed calls) latency
// figures from a transport's meta.
func (r *callResult) readMeta(meta map[string]any) {
	if meta == nil {
		return
	}
	for _, k := range []string{"nudges", "retries"} {
		if n, ok := number.Int(meta[k]); ok && n > 0 {
			r.retried = true
		}
	}
	if n, ok := number.Int(meta["attempts"]); ok && n > 1 {
		r.retried = true
	}
	if meta["transport"] == "cassette" {
		if n, ok := number.Int(meta["duration_ms"]); ok {
			r.latencyMS = n
		}
	}
	u := usage.FromMeta(meta)
	if u.HasCost {
		r.cost, r.hasCost = u.CostUSD, true
	}
	if u.HasTokens {
		r.tokens, r.hasTokens = u.Tokens(), true
	}
}

// agentsFor returns the agents a candidate's calls reach: the live ones,
// or wrappers that record or replay.
func (p *plan) agentsFor(c *candidate, o *Options) (runtime.Agents, error) {
	switch {
	case o.Replay != nil:
		return o.Replay.agents(p.c.Story, c), nil
	case o.Record != nil:
		return o.Record.agents(p.c.Story, c, o.Registry, o.Builtin, o.Clock), nil
	}
	return runtime.Agents{Registry: o.Registry, Builtin: o.Builtin}, nil
}

// matchKeys are the cassette match keys of a call besides its handler:
// the invoke id and the example's args (with.args, or each merged key).
func (p *plan) matchKeys(ex *Example, args map[string]any) map[string]any {
	m := map[string]any{"call": p.c.Site.Call}
	if p.hasArgs {
		m["args"] = normalise(args["args"])
		return m
	}
	for k := range ex.Args {
		m[k] = normalise(args[k])
	}
	return m
}

// episodeID is the cassette episode id of a job:
// <call>.<candidate key>.<example>.<repeat>.
func (p *plan) episodeID(j job) string {
	return fmt.Sprintf("%s.%s.%s.%d", p.c.Site.Call, p.cands[j.cand].key(), p.c.Dataset.Examples[j.ex].Name, j.rep+1)
}
