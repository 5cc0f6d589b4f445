package web

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/view/traceview"
)

// Entry is one line of a session's transcript: what was typed, what the
// story said, where it went, what it refused or failed at. Entries are
// read from the session's journal, so a session picked up after a restart
// shows the transcript it had.
type Entry struct {
	Turn int64  `json:"turn"`
	Kind string `json:"kind"` // input, say, move, rejected, error, notice
	Text string `json:"text"`
	// Note is an input's routing (free text) or a rejection's hint.
	Note string `json:"note,omitempty"`
}

// Entry kinds.
const (
	EntryInput    = "input"
	EntrySay      = "say"
	EntryMove     = "move"
	EntryRejected = "rejected"
	EntryError    = "error"
	EntryNotice   = "notice"
)

// entriesOf makes transcript entries of a piece of a journal's events
// (decodeLines: the header and lines that do not decode are left out; the
// trace pane shows the journal as it is).
func entriesOf(evs []trace.Event) []Entry {
	if len(evs) == 0 {
		return nil
	}
	var out []Entry
	for _, t := range traceview.Build(evs).Turns {
		out = append(out, turnEntries(t)...)
	}
	return out
}

// turnEntries are one turn's entries, in the order the trace has them.
func turnEntries(t *traceview.Turn) []Entry {
	var out []Entry
	add := func(kind, text, note string) { out = append(out, Entry{Turn: t.N, Kind: kind, Text: text, Note: note}) }
	// A resume's marker comes first: it is written before the turn's input.
	for _, it := range t.Items {
		if it.Other != nil && it.Other.Kind == trace.KindResumed {
			add(EntryNotice, resumedText(it.Other.Payload), "")
		}
	}
	if t.N > 0 && (t.Input != "" || t.Intent != "") {
		add(EntryInput, inputText(t), routeNote(t))
	}
	for _, it := range t.Items {
		switch {
		case it.Transition != nil:
			if it.Transition.From != it.Transition.To {
				from := it.Transition.From
				if from == "" {
					from = "start"
				}
				add(EntryMove, from+" → "+it.Transition.To, "")
			}
		case it.Say != "":
			add(EntrySay, it.Say, "")
		case it.Rejected != nil:
			add(EntryRejected, it.Rejected.Code+": "+it.Rejected.Message, it.Rejected.GuardHint)
		case it.Fault != nil:
			add(EntryError, "error: "+it.Fault.Error, "")
		case it.Harness != nil:
			add(EntryError, "error: "+firstOf(it.Harness.Error, it.Harness.Message, it.Harness.Reason), "")
		case it.Call != nil:
			for _, msg := range failedCalls(it.Call) {
				add(EntryError, msg, "")
			}
		}
	}
	return out
}

// inputText is what was typed: the line, or for an intent taken directly
// its name and slots.
func inputText(t *traceview.Turn) string {
	if name, ok := strings.CutPrefix(t.Input, "[intent] "); ok || t.Input == "" {
		if name == "" {
			name = t.Intent
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(t.Slots)) {
			parts = append(parts, fmt.Sprintf("%s=%v", k, t.Slots[k]))
		}
		return strings.Join(append([]string{name}, parts...), " ")
	}
	return t.Input
}

// routeNote says how a free-text input was routed.
func routeNote(t *traceview.Turn) string {
	r := t.Routed
	if r == nil {
		return ""
	}
	if r.Intent == "" {
		return "matched no intent (" + r.Tier + ")"
	}
	return fmt.Sprintf("→ %s (%s, %.2f)", r.Intent, r.Tier, r.Confidence)
}

// failedCalls are the failures of a call and the calls it made.
func failedCalls(c *traceview.Call) []string {
	var out []string
	if c.Error != "" && !anyFailed(c.Children) {
		name := c.Namespace
		if c.Type == "agent" {
			name = strings.TrimSpace(c.Agent + " " + c.Verb)
		}
		out = append(out, name+" failed: "+c.Error)
	}
	for _, ch := range c.Children {
		out = append(out, failedCalls(ch)...)
	}
	return out
}

func anyFailed(cs []*traceview.Call) bool {
	for _, c := range cs {
		if c.Error != "" || anyFailed(c.Children) {
			return true
		}
	}
	return false
}

func resumedText(p map[string]any) string {
	if redo, _ := p["redo"].(bool); redo {
		return "resumed: the unfinished turn is taken again"
	}
	return fmt.Sprintf("resumed after turn %v", p["after_turn"])
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
