package traceview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Transcript is an agent call's agent-action transcript: the trace's
// transcript_ref, and the actions read from the sidecar it points at
// (LoadTranscripts). Error says why the sidecar could not be read.
type Transcript struct {
	Format  string   `json:"format"`
	Path    string   `json:"path"`
	Events  int      `json:"events"`
	Actions []Action `json:"actions,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Action is one row of a transcript: an event of the stream, or one item
// of an assistant or user message. AtMS is the event's capture offset
// (nil when the sidecar has no timing for it).
type Action struct {
	AtMS *int64 `json:"at_ms,omitempty"`
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
}

// transcriptOf is the view of a transcript_ref (nil for none).
func transcriptOf(r *trace.TranscriptRef) *Transcript {
	if r == nil {
		return nil
	}
	return &Transcript{Format: r.Format, Path: r.Path, Events: r.Events}
}

// LoadTranscripts reads the sidecar of every agent call of r that has a
// transcript_ref, from dir (the trace file's directory), with
// trace.ReadTranscript (a path that leaves transcripts/ is not read). A
// sidecar that is missing or unreadable leaves its reason in the call's
// Transcript.Error.
func LoadTranscripts(r *Run, dir string) {
	var walk func(cs []*Call)
	walk = func(cs []*Call) {
		for _, c := range cs {
			if c.Transcript != nil {
				c.Transcript.load(dir)
			}
			walk(c.Children)
		}
	}
	for _, t := range r.Turns {
		for _, it := range t.Items {
			if it.Call != nil {
				walk([]*Call{it.Call})
			}
		}
	}
}

func (t *Transcript) load(dir string) {
	ref := &trace.TranscriptRef{Format: t.Format, Path: t.Path, Events: t.Events}
	tr, err := trace.ReadTranscript(dir, ref)
	if err != nil {
		t.Error = err.Error()
		return
	}
	for i, ev := range tr.Events {
		var at *int64
		if i < len(tr.Timings) {
			at = &tr.Timings[i]
		}
		t.Actions = appendActions(t.Actions, ev, at)
	}
}

// appendActions adds the rows of one event. A run of thinking-token
// counters folds into one row.
func appendActions(out []Action, line []byte, at *int64) []Action {
	var ev map[string]any
	if json.Unmarshal(line, &ev) != nil {
		return append(out, Action{AtMS: at, Kind: "event", Text: clip(string(line))})
	}
	if k, ok := ev["_kitsoki"].(string); ok {
		text, _ := ev["reason"].(string)
		if t, ok := ev["text"].(string); ok && text == "" {
			text = t
		}
		return append(out, Action{AtMS: at, Kind: "kitsoki " + k, Text: clip(text)})
	}
	typ, _ := ev["type"].(string)
	sub, _ := ev["subtype"].(string)
	switch typ {
	case "assistant", "user":
		msg, _ := ev["message"].(map[string]any)
		items, _ := msg["content"].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			out = append(out, contentAction(m, at))
		}
		return out
	case "system":
		if sub == "thinking_tokens" {
			if n := len(out); n > 0 && out[n-1].Kind == "thinking tokens" {
				out[n-1].Text = fmt.Sprint(ev["estimated_tokens"])
				return out
			}
			return append(out, Action{AtMS: at, Kind: "thinking tokens", Text: fmt.Sprint(ev["estimated_tokens"])})
		}
		return append(out, Action{AtMS: at, Kind: strings.TrimSpace("system " + sub)})
	case "result":
		text, _ := ev["result"].(string)
		return append(out, Action{AtMS: at, Kind: strings.TrimSpace("result " + sub), Text: clip(text)})
	}
	return append(out, Action{AtMS: at, Kind: "event", Text: clip(string(line))})
}

// contentAction is the row of one item of a message's content.
func contentAction(m map[string]any, at *int64) Action {
	typ, _ := m["type"].(string)
	switch typ {
	case "text":
		s, _ := m["text"].(string)
		return Action{AtMS: at, Kind: "text", Text: clip(s)}
	case "thinking":
		s, _ := m["thinking"].(string)
		return Action{AtMS: at, Kind: "thinking", Text: clip(s)}
	case "tool_use":
		name, _ := m["name"].(string)
		return Action{AtMS: at, Kind: "tool_use", Text: clip(name + " " + plainJSON(m["input"]))}
	case "tool_result":
		var s string
		switch c := m["content"].(type) {
		case string:
			s = c
		default:
			s = plainJSON(c)
		}
		return Action{AtMS: at, Kind: "tool_result", Text: clip(s)}
	}
	return Action{AtMS: at, Kind: typ, Text: clip(plainJSON(m))}
}

// plainJSON is v as JSON without HTML escaping (a row is text).
func plainJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // decoded JSON always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// clip keeps a row to one line of at most 200 characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
