package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// The text form of kitsoki session show: one "label  value" line per
// fact, the world's variables below, sorted by name. --json prints the
// same facts as one JSON object instead (docs/sessions.md).

// showLine is one line of the text form; a line with an empty value is
// left out.
type showLine struct{ label, value string }

// showText is what the text form prints: the lines, then the world.
type showText struct {
	lines []showLine
	world map[string]any
}

// write prints the lines with their values in one column, then the
// world, one variable a line, in one buffered write.
func (s showText) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	width := 0
	for _, l := range s.lines {
		if l.value != "" {
			width = max(width, len(l.label))
		}
	}
	for _, l := range s.lines {
		if l.value != "" {
			fmt.Fprintf(bw, "%-*s  %s\n", width, l.label, l.value)
		}
	}
	if s.world != nil {
		names := make([]string, 0, len(s.world))
		for k := range s.world {
			names = append(names, k)
		}
		slices.Sort(names)
		if len(names) == 0 {
			fmt.Fprintf(bw, "%-*s  (empty)\n", width, "world")
		} else {
			fmt.Fprintln(bw, "world")
		}
		for _, k := range names {
			fmt.Fprintf(bw, "  %s = %s\n", k, compactJSON(s.world[k]))
		}
	}
	return bw.Flush()
}

// compactJSON is v as one line of JSON (a string in quotes, an object
// with its keys sorted), or Go's %v of it when it is not JSON.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// localShowText is the text form of a session of the sessions
// directory: its index entry, then where its journal stopped (j is nil
// when the journal could not be read, and jerr says why).
func localShowText(m session.Meta, j *session.Journal, jerr string) showText {
	story := storyName(m)
	if m.Story != "" && story != m.Story {
		story += " (" + m.Story + ")"
	}
	s := showText{lines: []showLine{
		{"session", m.ID}, {"key", m.Key}, {"story", story},
		{"state", fmt.Sprintf("%s, turn %d", orDefault(m.State, "-"), m.Turn)},
		{"finished", doneText(m.Finished, m.Exit)},
		{"created", timeText(m.Created)}, {"updated", timeText(m.Updated)},
		{"cost", fmt.Sprintf("$%.4f", m.CostUSD)},
		{"trace", fmt.Sprintf("%s (%d bytes)", m.Trace, m.TraceBytes)},
	}}
	if m.ForkedFrom != "" {
		s.lines = append(s.lines, showLine{"forked", fmt.Sprintf("from %s at turn %d", m.ForkedFrom, m.ForkedAt)})
	}
	s.lines = append(s.lines, showLine{"last error", m.LastError})
	if j == nil {
		s.lines = append(s.lines, showLine{"journal", "could not be read: " + jerr})
		return s
	}
	s.lines = append(s.lines, showLine{"journal", fmt.Sprintf("stopped at %s, turn %d, finished %s", orDefault(j.State, "-"), j.Turn, yesNo(j.Done))})
	if p := j.Partial; p != nil {
		s.lines = append(s.lines, showLine{"unfinished", undoneText(p)})
	}
	s.world = orEmpty(j.World)
	return s
}

func doneText(done bool, exit string) string {
	if exit != "" {
		return yesNo(done) + " (exit " + exit + ")"
	}
	return yesNo(done)
}

// unfinishedText says which turn a crash left unfinished, its input and
// the calls it had dispatched.
func undoneText(p *session.Partial) string {
	var b strings.Builder
	fmt.Fprintf(&b, "turn %d", p.Turn)
	if p.HasInput {
		fmt.Fprintf(&b, " %q", p.Input.Text)
	}
	names := make([]string, 0, len(p.Calls))
	for _, c := range p.Calls {
		n := c.Namespace
		if c.Call != "" {
			n += " (" + c.Call + ")"
		}
		if c.Returned {
			n += " returned"
		}
		names = append(names, n)
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, ", %d call(s): %s", len(names), strings.Join(names, ", "))
	}
	return b.String()
}

// clusterShowText is the text form of a session on a cluster.
func clusterShowText(si *cluster.SessionInfo, namespace string) showText {
	story := si.Story.Path
	if si.Story.Bundle != "" {
		story += " (bundle " + si.Story.Bundle + ")"
	}
	s := showText{lines: []showLine{
		{"session", si.ID}, {"run id", si.RunID}, {"status", si.Status},
		{"app", si.AppID}, {"story", story},
		{"namespace", namespace}, {"task queue", si.TaskQueue},
		{"started", timeText(si.Started)}, {"updated", timeText(si.Updated)}, {"closed", timeText(si.Closed)},
		{"error", si.Error},
	}}
	if si.State == "" {
		return s
	}
	allowed := strings.Join(si.Allowed, ", ")
	if allowed == "" {
		allowed = "(none)"
	}
	s.lines = append(s.lines,
		showLine{"state", fmt.Sprintf("%s, turn %d", si.State, si.Turn)},
		showLine{"finished", doneText(si.Done, si.Exit)},
		showLine{"allowed", allowed})
	s.world = orEmpty(si.World.Map())
	return s
}

// localShowJSON is the JSON form of a local session: {"session": the
// index entry, "journal": where it stopped} or "journal_error".
func localShowJSON(m session.Meta, j *session.Journal, jerr string) map[string]any {
	out := map[string]any{"session": m}
	if j == nil {
		out["journal_error"] = jerr
		return out
	}
	st := map[string]any{"state": j.State, "turn": j.Turn, "world": j.World, "finished": j.Done}
	if j.Partial != nil {
		st["unfinished_turn"] = map[string]any{"turn": j.Partial.Turn, "input": j.Partial.Input.Text, "calls": j.Partial.Calls}
	}
	out["journal"] = st
	return out
}

func printShowJSON(w io.Writer, out map[string]any) error {
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return exitWith(exitFailure, err)
	}
	fmt.Fprintln(w, string(b))
	return nil
}
