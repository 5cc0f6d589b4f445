package traceview

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
)

// ReportOptions shape the terminal report.
type ReportOptions struct {
	// Color writes ANSI colours (callers set it only for a terminal, and
	// never when NO_COLOR is set).
	Color bool
	// Full prints prompts and answers whole instead of one clipped line.
	Full bool
}

// maxLine is how many characters of a prompt or answer the report shows
// without Full.
const maxLine = 100

type painter struct{ on bool }

func (p painter) c(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) bold(s string) string  { return p.c("1", s) }
func (p painter) dim(s string) string   { return p.c("2", s) }
func (p painter) red(s string) string   { return p.c("31", s) }
func (p painter) green(s string) string { return p.c("32", s) }
func (p painter) cyan(s string) string  { return p.c("36", s) }
func (p painter) mag(s string) string   { return p.c("35", s) }

// Report writes the whole run: a header line, every turn, the totals.
func Report(w io.Writer, r *Run, o ReportOptions) error {
	ew := &errWriter{w: w}
	WriteHeader(ew, r, o)
	for _, t := range r.Turns {
		WriteTurn(ew, t, o)
	}
	WriteTotals(ew, r, o)
	return ew.err
}

// WriteHeader writes the run's first line.
func WriteHeader(w io.Writer, r *Run, o ReportOptions) {
	p := painter{o.Color}
	fmt.Fprintf(w, "%s %s (schema %d, written %s)\n", p.bold("trace"), r.Path, r.SchemaVersion, r.WrittenAt)
	if h := r.Session; h.SessionID != "" || h.AppID != "" {
		line := fmt.Sprintf("session %s of %s", h.SessionID, h.AppID)
		if h.StoryPath != "" {
			line += " (" + h.StoryPath + ")"
		}
		if h.KitsokiVersion != "" {
			line += ", kitsoki " + h.KitsokiVersion
		}
		if h.ForkedFrom != "" {
			line += fmt.Sprintf(", forked from %s at turn %d", h.ForkedFrom, h.ForkedAtTurn)
		}
		fmt.Fprintln(w, p.dim(line))
	}
}

// WriteTurn writes one turn.
func WriteTurn(w io.Writer, t *Turn, o ReportOptions) {
	p := painter{o.Color}
	head := fmt.Sprintf("turn %d", t.N)
	switch {
	case t.N == 0:
		fmt.Fprintf(w, "\n%s  %s\n", p.bold(head), p.dim("(seed)"))
	default:
		how := "free text"
		if t.Direct {
			how = "intent"
		}
		line := fmt.Sprintf("\n%s  %s  %s", p.bold(head), quote(t.Input), p.dim(fmt.Sprintf("[%s, +%s, %s]", how, ms(t.StartMS), ms(t.DurationMS))))
		fmt.Fprintln(w, line)
	}
	if t.Routed != nil {
		r := t.Routed
		to := r.Intent
		if to == "" {
			to = "(none)"
		}
		fmt.Fprintf(w, "  routed   %s by %s (confidence %s)\n", p.mag(to), r.Tier, num(r.Confidence))
	}
	if t.Intent != "" && t.N > 0 {
		fmt.Fprintf(w, "  intent   %s%s\n", p.mag(t.Intent), slots(t.Slots))
	}
	for _, it := range t.Items {
		writeItem(w, it, "  ", o)
	}
	if e := t.End; e != nil {
		switch e.Outcome {
		case "transitioned":
			fmt.Fprintf(w, "  end      %s, in %s\n", e.Outcome, p.cyan(e.To))
		case "rejected":
			fmt.Fprintf(w, "  end      %s (%s)\n", p.red(e.Outcome), e.Code)
		default:
			fmt.Fprintf(w, "  end      %s: %s\n", p.red(e.Outcome), e.Error)
		}
	} else if t.N > 0 {
		fmt.Fprintf(w, "  %s\n", p.dim("(turn not ended)"))
	}
}

func writeItem(w io.Writer, it *Item, ind string, o ReportOptions) {
	p := painter{o.Color}
	switch {
	case it.Transition != nil:
		tr := it.Transition
		from := tr.From
		if from == "" {
			from = "(start)"
		}
		fmt.Fprintf(w, "%sstate    %s → %s  %s\n", ind, p.cyan(from), p.cyan(tr.To), p.dim("on "+tr.Intent))
	case it.World != nil:
		fmt.Fprintf(w, "%sworld    %s\n", ind, worldLine(it.World))
	case it.Call != nil:
		writeCall(w, it.Call, ind, o)
	case it.Rejected != nil:
		r := it.Rejected
		line := fmt.Sprintf("rejected %s in %s: %s (%s)", r.Intent, r.State, r.Message, r.Code)
		if r.GuardHint != "" {
			line += ": " + r.GuardHint
		}
		fmt.Fprintf(w, "%s%s\n", ind, p.red(line))
	case it.Fault != nil:
		fmt.Fprintf(w, "%s%s\n", ind, p.red(fmt.Sprintf("fault    in %s on %s: %s", it.Fault.State, it.Fault.Intent, it.Fault.Error)))
	case it.Harness != nil:
		h := it.Harness
		msg := h.Error
		if msg == "" {
			msg = h.Message
		}
		fmt.Fprintf(w, "%s%s\n", ind, p.red(fmt.Sprintf("engine   %s%s: %s", h.Phase, h.Reason, msg)))
	case it.Say != "":
		fmt.Fprintf(w, "%ssay      %s\n", ind, clipLine(it.Say, o.Full))
	case it.Other != nil:
		fmt.Fprintf(w, "%sevent    %s %s\n", ind, it.Other.Kind, p.dim(clipLine(compact(it.Other.Payload), o.Full)))
	}
}

func writeCall(w io.Writer, c *Call, ind string, o ReportOptions) {
	p := painter{o.Color}
	if c.Type == "host" {
		status := p.green("ok")
		if c.Open {
			status = p.dim("running")
		} else if c.Error != "" {
			status = p.red("error: " + c.Error)
		}
		name := c.Namespace
		if id, ok := c.Args["call"].(string); ok && id != "" {
			name += " (" + id + ")"
		}
		d := ms(float64(c.DurationMS))
		if c.Recorded {
			d += " recorded"
		}
		fmt.Fprintf(w, "%shost     %s  %s  %s\n", ind, p.bold(name), d, status)
		for _, ch := range c.Children {
			writeCall(w, ch, ind+"  ", o)
		}
		for _, wc := range c.World {
			fmt.Fprintf(w, "%s  bind     %s\n", ind, worldLine(wc))
		}
		return
	}
	who := c.Agent
	if who == "" {
		who = "(agent)"
	}
	parts := []string{p.bold("agent " + who), c.Verb}
	if c.Purpose != "" {
		parts = append(parts, "for "+c.Purpose)
	}
	if c.Model != "" {
		parts = append(parts, "model "+c.Model)
	}
	d := ms(float64(c.DurationMS))
	if c.Recorded {
		d += " recorded"
	}
	parts = append(parts, d)
	if c.HasUsage {
		parts = append(parts, fmt.Sprintf("tokens %d in / %d out", c.InputTokens, c.OutputTokens))
	}
	if c.HasCost {
		parts = append(parts, usd(c.CostUSD))
	}
	switch {
	case c.Open:
		parts = append(parts, p.dim("running"))
	case c.Error != "":
		parts = append(parts, p.red("error "+c.ErrorKind))
	default:
		parts = append(parts, p.green("ok"))
	}
	if c.Schema != "" {
		parts = append(parts, "schema "+c.Schema)
	}
	fmt.Fprintf(w, "%s%s\n", ind, strings.Join(parts, "  "))
	if c.Prompt != "" {
		fmt.Fprintf(w, "%s  prompt   %s\n", ind, p.dim(clipLine(c.Prompt, o.Full)))
	}
	if c.Answer != nil {
		fmt.Fprintf(w, "%s  answer   %s\n", ind, clipLine(compact(c.Answer), o.Full))
	}
	if c.Error != "" {
		fmt.Fprintf(w, "%s  error    %s\n", ind, p.red(c.Error))
	}
	if s := c.Substitution; s != nil {
		fmt.Fprintf(w, "%s  fallback %s → %s (%s)\n", ind, s.OriginalPlugin, s.FallbackPlugin, s.Reason)
	}
	for _, se := range c.SubEvents {
		fmt.Fprintf(w, "%s  sub      %s %s\n", ind, se.Kind, p.dim(clipLine(compact(se.Payload), o.Full)))
	}
	writeTranscript(w, c.Transcript, ind, o)
}

// writeTranscript writes an agent call's transcript line and, with Full,
// its actions.
func writeTranscript(w io.Writer, t *Transcript, ind string, o ReportOptions) {
	if t == nil {
		return
	}
	p := painter{o.Color}
	fmt.Fprintf(w, "%s  actions  %d events  %s\n", ind, t.Events, p.dim(t.Path))
	if t.Error != "" {
		fmt.Fprintf(w, "%s           %s\n", ind, p.red("cannot read: "+t.Error))
		return
	}
	if !o.Full {
		return
	}
	for _, a := range t.Actions {
		at := "      "
		if a.AtMS != nil {
			at = fmt.Sprintf("%5dms", *a.AtMS)
		}
		fmt.Fprintf(w, "%s    %s %-16s %s\n", ind, p.dim(at), a.Kind, a.Text)
	}
}

// WriteTotals writes the closing lines.
func WriteTotals(w io.Writer, r *Run, o ReportOptions) {
	p := painter{o.Color}
	t := r.Totals
	fmt.Fprintf(w, "\n%s  %d turns, %d host calls, %d agent calls, tokens %d in / %d out, cost %s, %s\n",
		p.bold("totals"), t.Turns, t.HostCalls, t.AgentCalls, t.InputTokens, t.OutputTokens, usd(t.CostUSD), ms(t.DurationMS))
	if t.Errors > 0 {
		kinds := make([]string, 0, len(t.ErrorKinds))
		for k, n := range t.ErrorKinds {
			kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(kinds)
		line := fmt.Sprintf("errors  %d", t.Errors)
		if len(kinds) > 0 {
			line += " (" + strings.Join(kinds, ", ") + ")"
		}
		fmt.Fprintln(w, p.red(line))
	}
	if r.State != "" {
		fmt.Fprintf(w, "state   %s\n", p.cyan(r.State))
	}
}

func worldLine(c *WorldChange) string {
	switch c.Op {
	case "increment":
		s := fmt.Sprintf("%s += %v", c.Key, c.Value)
		if n, ok := number.Int(c.Before); ok && c.Known {
			if d, ok := number.Int(c.Value); ok {
				s += fmt.Sprintf("  (%d → %d)", n, n+d)
			}
		}
		return s
	case "set":
		if c.Known {
			return fmt.Sprintf("%s: %s → %s", c.Key, clipLine(compact(c.Before), false), clipLine(compact(c.Value), false))
		}
		return fmt.Sprintf("%s = %s", c.Key, clipLine(compact(c.Value), false))
	}
	return fmt.Sprintf("%s: skipped (%s)", c.Key, c.Op)
}

func slots(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+compact(m[k]))
	}
	return " " + strings.Join(parts, " ")
}

// compact is a value as one line of JSON (strings quoted).
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func clipLine(s string, full bool) string {
	if full {
		return s
	}
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= maxLine {
		return s
	}
	return string(r[:maxLine-1]) + "…"
}

func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%dms", int64(v))
	}
	return fmt.Sprintf("%.1fms", v)
}

func usd(v float64) string { return fmt.Sprintf("$%.5f", v) }

func num(f float64) string { return fmt.Sprintf("%.2f", f) }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}
