package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Commands are a front end's own `:` commands beside the shared ones
// (kitsoki run's plugin commands, or, for a session on the cluster, their
// refusal).
type Commands interface {
	// Names are the commands, as typed (":plugins"), for completion and
	// the suggestion of an unknown command.
	Names() []string
	// Help is their lines of :help ("" for none).
	Help() string
	// Run runs line if it is one of them, printing to out and errw; false
	// says it is not.
	Run(ctx context.Context, line string, out, errw io.Writer) bool
}

// Console is the line front end over a session: the terminal prompt,
// scripted input, --say, the `:` commands and the report of every turn
// (says, views, rejections, failures, exit codes). The terminal UI drives
// it too (Do), so every front end prints the same lines and exits with
// the same codes.
type Console struct {
	D        Driver
	Out, Err io.Writer
	// Extra are the front end's own commands; nil is none.
	Extra Commands
	// QuitHelp is :help's :quit line ("leave" when empty).
	QuitHelp string
	// Replay, with --cassette, prints the turn's replay warnings and
	// misses and says whether a call missed.
	Replay func(io.Writer) bool
	// TUIView leaves the view to the terminal UI, which renders the typed
	// view; ViewShown says the last report would have printed it.
	TUIView, ViewShown bool
	// Reload, when set, lets `:reload` end the run so that it starts
	// again on the story as it is on disk (reload.go); Reloading says
	// one was taken.
	Reload    *Reloader
	Reloading bool
}

// Prompt is the terminal prompt (promptLoop).
func (c *Console) Prompt(ctx context.Context, in *Lines) int { return promptLoop(ctx, c, in) }

// Script runs the lines of in as scripted input (scriptLoop).
func (c *Console) Script(ctx context.Context, in io.Reader) int { return scriptLoop(ctx, c, in) }

// Say runs the --say texts (sayLoop).
func (c *Console) Say(ctx context.Context, says []string) int { return sayLoop(ctx, c, says) }

// Begin enters the story (or resumes the session) and reports it; stop
// says the run ends there.
func (c *Console) Begin(ctx context.Context) (code int, stop bool) {
	out, err := c.D.Begin(ctx)
	if err != nil {
		fmt.Fprintln(c.Err, "kitsoki:", err)
		return CodeOf(err), true
	}
	return c.reportTurn(out)
}

// Line runs one line as the prompt does: a `:` command, or a turn. It is
// what the terminal UI sends (it handles :help, :intents, :state and
// :quit itself). turned says a turn was taken (a line, or :back).
func (c *Console) Line(ctx context.Context, line string) (code int, stop, turned bool) {
	c.ViewShown = false
	r := runCommand(ctx, c, line)
	switch {
	case !r.handled:
		code, stop = c.turn(ctx, line)
		return code, stop, true
	case r.turn:
		return r.code, r.stop, true
	}
	return ExitOK, false, false
}

// Names are every `:` command of the console, the shared ones first.
func (c *Console) Names() []string { return c.names() }

func (c *Console) writers() (io.Writer, io.Writer) { return c.Out, c.Err }

// turn takes one line: free text is routed, a typed line is parsed and
// taken.
func (c *Console) turn(ctx context.Context, line string) (int, bool) { return c.take(ctx, Raw(line)) }

// say routes one free-text line and takes the turn it resolves to.
func (c *Console) say(ctx context.Context, text string) (int, bool) { return c.take(ctx, Text(text)) }

// take takes in and reports it.
func (c *Console) take(ctx context.Context, in Input) (int, bool) {
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(c.Err, "kitsoki: interrupted")
		return ExitFailure, true
	}
	out, err := c.D.Take(ctx, in)
	if ie, ok := errors.AsType[*InputError](err); ok {
		fmt.Fprintln(c.Err, "kitsoki:", ie)
		return ExitRejected, true
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(c.Err, "kitsoki: interrupted")
		} else {
			fmt.Fprintln(c.Err, "kitsoki:", err)
		}
		return failCode(err), true
	}
	return c.reportTurn(out)
}

// failCode is the exit code of a turn that failed with err: a spending
// cap reached is an agent failure (ExitAgent), anything else the run's
// (ExitFailure).
func failCode(err error) int {
	if _, ok := errors.AsType[*agent.CostCapError](err); ok {
		return ExitAgent
	}
	return ExitFailure
}

func (c *Console) back(ctx context.Context) (int, bool, error) {
	out, err := c.D.Back(ctx)
	if errors.Is(err, orchestrator.ErrNoHistory) {
		return ExitOK, false, err
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(c.Err, "kitsoki: interrupted")
		} else {
			fmt.Fprintln(c.Err, "kitsoki:", err)
		}
		return ExitFailure, true, nil
	}
	code, stop := c.reportTurn(out)
	return code, stop, nil
}

func (c *Console) readWorld(ctx context.Context) (map[string]any, error) {
	st, err := c.D.Status(ctx)
	if err != nil {
		return nil, err
	}
	return st.World, nil
}

// Help is the :help text.
func (c *Console) Help() string { return c.help() }

func (c *Console) help() string {
	quit := c.QuitHelp
	if quit == "" {
		quit = "leave"
	}
	h := promptHelp + "\n:quit      " + quit
	if c.Extra != nil && c.Extra.Help() != "" {
		h += "\n" + c.Extra.Help()
	}
	return h
}

func (c *Console) command(ctx context.Context, line string) bool {
	return c.Extra != nil && c.Extra.Run(ctx, line, c.Out, c.Err)
}

func (c *Console) names() []string {
	out := append([]string(nil), Builtin...)
	if c.Extra != nil {
		out = append(out, c.Extra.Names()...)
	}
	return out
}

func (c *Console) skipInput(ctx context.Context, line string) (bool, int) {
	skip, err := c.D.Skip(ctx, line)
	if err != nil {
		fmt.Fprintln(c.Err, "kitsoki:", err)
		return true, CodeOf(err)
	}
	return skip, ExitOK
}

// settle lets the background jobs still running finish (or park on a
// question) and reports what they did.
func (c *Console) settle(ctx context.Context) (int, bool) {
	jobs, err := c.D.Settle(ctx)
	for _, out := range jobs {
		if code, stop := c.reportTurn(out); stop {
			return code, true
		}
	}
	if err != nil {
		fmt.Fprintln(c.Err, "kitsoki:", err)
		return ExitFailure, true
	}
	return ExitOK, false
}

func (c *Console) current() string {
	st, err := c.D.Status(context.Background())
	if err != nil {
		return ""
	}
	return st.State
}

// describe prints the state's description and the intents it accepts.
func (c *Console) describe(ctx context.Context) {
	st, err := c.D.Status(ctx)
	if err != nil {
		fmt.Fprintln(c.Err, "kitsoki:", err)
		return
	}
	Describe(c.Out, st)
}

// Describe prints a state's description and its visible intents with
// their slots: "  greet name=<string> [style=casual|formal]  — Greet."
func Describe(out io.Writer, st *Status) {
	fmt.Fprintf(out, "\n[%s] %s\n", st.State, st.Description)
	for _, in := range st.Visible() {
		line := "  " + in.Name
		var slots []string
		for _, sl := range in.Slots {
			s := sl.Name + "=<" + sl.Type + ">"
			if len(sl.Values) > 0 {
				s = sl.Name + "=" + strings.Join(sl.Values, "|")
			}
			if !sl.Required {
				s = "[" + s + "]"
			}
			slots = append(slots, s)
		}
		if len(slots) > 0 {
			line += " " + strings.Join(slots, " ")
		}
		if h := in.Hint(); h != "" {
			line += "  — " + h
		}
		fmt.Fprintln(out, line)
	}
}

// reportTurn reports a turn's outcome, then the replay's verdict: a
// cassette miss stops the run with ExitAgent, even when on_error handled
// the failed call (a replay that left the recording is not the run it
// claims to be).
func (c *Console) reportTurn(out *orchestrator.Outcome) (int, bool) {
	code, stop := c.Report(out)
	if c.Replay != nil && c.Replay(c.Err) && code == ExitOK {
		return ExitAgent, true
	}
	return code, stop
}

// Report prints a turn's outcome and says whether the run must stop, with
// which exit code.
func (c *Console) Report(out *orchestrator.Outcome) (code int, stop bool) {
	for _, b := range out.Background { // what background jobs did before this turn
		if code, stop := c.Report(b); stop {
			return code, stop
		}
	}
	if out.Job != "" {
		fmt.Fprintf(c.Out, "[background job %s]\n", out.Job)
	}
	for _, s := range out.Says {
		fmt.Fprintln(c.Out, s)
	}
	for i := range out.Handled {
		fmt.Fprintln(c.Err, HandledLine(&out.Handled[i]))
	}
	switch out.Outcome {
	case orchestrator.OutcomeRejected:
		fmt.Fprintln(c.Err, out.Rejection.Error())
		if out.Rejection.GuardHint != "" {
			fmt.Fprintln(c.Err, "hint:", out.Rejection.GuardHint)
		}
		if len(out.HostErrors) > 0 { // the router call failed
			return ExitAgent, true
		}
		return ExitRejected, true
	case orchestrator.OutcomeError:
		fmt.Fprintln(c.Err, "error:", out.Err)
		return ExitMachine, true
	}
	if out.View != "" {
		c.ViewShown = true
		if !c.TUIView {
			fmt.Fprintln(c.Out, out.View)
		}
	}
	for _, e := range out.HostErrors {
		fmt.Fprintln(c.Err, "error:", e)
	}
	if len(out.HostErrors) > 0 {
		return ExitAgent, true // an unhandled failure wins, terminal or not
	}
	if out.Done {
		if out.Exit != "" {
			fmt.Fprintf(c.Err, "kitsoki: reached exit %q\n", out.Exit)
		}
		return ExitOK, true
	}
	return ExitOK, false
}

// OutcomeCode is the exit code of a turn's outcome, as Report decides it
// (ExitOK for a turn that took place, terminal or not).
func OutcomeCode(out *orchestrator.Outcome) int {
	for _, b := range out.Background {
		if code := OutcomeCode(b); code != ExitOK {
			return code
		}
	}
	switch {
	case out.Outcome == orchestrator.OutcomeRejected && len(out.HostErrors) > 0:
		return ExitAgent
	case out.Outcome == orchestrator.OutcomeRejected:
		return ExitRejected
	case out.Outcome == orchestrator.OutcomeError:
		return ExitMachine
	case len(out.HostErrors) > 0:
		return ExitAgent
	}
	return ExitOK
}

// HandledLine is the one stderr line of a call failure an on_error
// handled: the call, the error kind and message, and where the run went,
// e.g.
//
//	agent error: host.agent.decide (call audit, call_id 80305ae2a61c54af) transport_error: claude CLI "claude" not found … — on_error → intake
func HandledLine(h *orchestrator.HandledError) string {
	var b strings.Builder
	// A handler's own error often starts with the invoke's name already.
	what, msg := "host error", strings.TrimPrefix(h.Err.Error(), h.Namespace+": ")
	ae, isAgent := agent.AsAskError(h.Err)
	if isAgent {
		what = "agent error"
		msg = string(ae.Kind)
		if d := askDetail(ae); d != "" {
			msg += ": " + d
		}
	}
	b.WriteString(what + ": " + h.Namespace)
	var ids []string
	if h.Call != "" {
		ids = append(ids, "call "+h.Call)
	}
	if h.CallID != "" {
		ids = append(ids, "call_id "+h.CallID)
	}
	if len(ids) > 0 {
		b.WriteString(" (" + strings.Join(ids, ", ") + ")")
	}
	if isAgent {
		b.WriteString(" " + msg)
	} else {
		b.WriteString(": " + msg)
	}
	b.WriteString(" — on_error → " + h.OnError)
	switch h.Redirect {
	case orchestrator.RedirectIgnored:
		b.WriteString(" (already there: nothing to redirect)")
	case orchestrator.RedirectCapped:
		b.WriteString(fmt.Sprintf(" not followed: more than %d chained on_error redirects", orchestrator.MaxOnErrorDepth))
	}
	// One line: a multi-line message (a plugin's stderr tail) is folded.
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(b.String())
}

// askDetail is an AskError's message without the "agent: <kind>: " prefix.
func askDetail(ae *agent.AskError) string {
	switch {
	case ae.Detail != "":
		return ae.Detail
	case ae.Err != nil:
		return ae.Err.Error()
	}
	return ""
}

// closest is the candidate nearest to word (edit distance at most 2), or "".
func closest(word string, cands []string) string { return nearmiss.Closest(word, cands, 2) }

// Join is one Commands of several: their names and help in order, and a
// line runs on the first that knows it. A nil entry is skipped.
func Join(cmds ...Commands) Commands { return joined(cmds) }

type joined []Commands

func (j joined) Names() []string {
	var out []string
	for _, c := range j {
		if c != nil {
			out = append(out, c.Names()...)
		}
	}
	return out
}

func (j joined) Help() string {
	var hs []string
	for _, c := range j {
		if c != nil && c.Help() != "" {
			hs = append(hs, c.Help())
		}
	}
	return strings.Join(hs, "\n")
}

func (j joined) Run(ctx context.Context, line string, out, errw io.Writer) bool {
	for _, c := range j {
		if c != nil && c.Run(ctx, line, out, errw) {
			return true
		}
	}
	return false
}
