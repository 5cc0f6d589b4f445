package driver

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// FrameVersion is the version of the Frame format; a change that removes
// or renames a field, or changes a field's meaning, makes a new version
// (docs/sessions.md).
const FrameVersion = 1

// Frame is the answer of the session API to every call that reads or
// moves a session (`kitsoki session create|continue|inspect --json`, the
// MCP session tools, the Go API): where the session is, what it shows,
// what it accepts next, what the call's turn wrote, and the exit status.
type Frame struct {
	// Frame is FrameVersion.
	Frame   int          `json:"frame"`
	Session FrameSession `json:"session"`
	// Outcome is the turn's: started (turn 0 of a new session), resumed
	// (a session picked up, no input taken), transitioned, rejected or
	// error; status for a frame that took no turn (inspect).
	Outcome string `json:"outcome"`
	From    string `json:"from,omitempty"`
	State   string `json:"state"`
	// Description is the state's description:.
	Description string `json:"description,omitempty"`
	// Says are the turn's say: lines, in order.
	Says []string `json:"says,omitempty"`
	// View is the state's view as text; ViewElements the typed view;
	// ViewError why it did not render.
	View         string        `json:"view,omitempty"`
	ViewElements []ViewElement `json:"view_elements,omitempty"`
	ViewError    string        `json:"view_error,omitempty"`
	// Route is how a free-text input was routed.
	Route *FrameRoute `json:"route,omitempty"`
	// Rejection is why the input was refused (outcome rejected).
	Rejection *orchestrator.Rejection `json:"rejection,omitempty"`
	// Error is the fault that aborted the turn (outcome error).
	Error string `json:"error,omitempty"`
	// CallErrors are the failures of calls no on_error handled; Handled
	// the ones an on_error did (one line each, as kitsoki run prints them).
	CallErrors []string `json:"call_errors,omitempty"`
	Handled    []string `json:"handled,omitempty"`
	// AllowedIntents is what the state accepts now, with the slots.
	AllowedIntents []IntentInfo    `json:"allowed_intents"`
	World          map[string]any  `json:"world"`
	Jobs           []FrameJob      `json:"jobs,omitempty"`
	Events         json.RawMessage `json:"events,omitempty"`
	Done           bool            `json:"done"`
	Exit           string          `json:"exit,omitempty"`
	Status         FrameStatus     `json:"status"`
}

// FrameSession names the session.
type FrameSession struct {
	ID         string `json:"id"`
	Key        string `json:"key,omitempty"`
	AppID      string `json:"app_id,omitempty"`
	Story      string `json:"story,omitempty"`
	StoryHash  string `json:"story_hash,omitempty"`
	Turn       int64  `json:"turn"`
	Trace      string `json:"trace,omitempty"`
	ForkedFrom string `json:"forked_from,omitempty"`
}

// FrameRoute is how free text was routed.
type FrameRoute struct {
	Tier       string         `json:"tier"`
	Intent     string         `json:"intent"`
	Slots      map[string]any `json:"slots,omitempty"`
	Confidence float64        `json:"confidence"`
}

// FrameJob is a background job that has not ended.
type FrameJob struct {
	ID       string         `json:"id"`
	Handler  string         `json:"handler"`
	Status   string         `json:"status"`
	Question *jobs.Question `json:"question,omitempty"`
}

// FrameStatus is the call's exit status: the code the CLI exits with and
// its name (ok, rejected, agent_error, fault, busy, failure).
type FrameStatus struct {
	Code int    `json:"code"`
	Name string `json:"name"`
}

// StatusName names an exit code for a frame.
func StatusName(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitRejected:
		return "rejected"
	case ExitAgent:
		return "agent_error"
	case ExitMachine:
		return "fault"
	case ExitIncomplete:
		return "incomplete"
	case ExitBusy:
		return "busy"
	case ExitUsage:
		return "usage"
	}
	return "failure"
}

// ViewElement is one element of a typed view in a frame.
type ViewElement struct {
	Kind     string      `json:"kind"`
	Block    string      `json:"block,omitempty"`
	Text     string      `json:"text"`
	Body     string      `json:"body,omitempty"`
	Subtitle string      `json:"subtitle,omitempty"`
	Color    string      `json:"color,omitempty"`
	Pairs    []ViewPair  `json:"pairs,omitempty"`
	Items    []ViewItem  `json:"items,omitempty"`
	Choice   *ViewChoice `json:"choice,omitempty"`
	Media    *ViewMedia  `json:"media,omitempty"`
}

// ViewPair is a kv element's pair.
type ViewPair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ViewItem is a list or choice item.
type ViewItem struct {
	Label  string         `json:"label"`
	Hint   string         `json:"hint,omitempty"`
	Intent string         `json:"intent,omitempty"`
	Slots  map[string]any `json:"slots,omitempty"`
	Value  string         `json:"value,omitempty"`
}

// ViewChoice is a choice element's envelope.
type ViewChoice struct {
	Mode   string `json:"mode"`
	Prompt string `json:"prompt,omitempty"`
	Intent string `json:"intent,omitempty"`
	Slot   string `json:"slot,omitempty"`
	Min    int64  `json:"min,omitempty"`
	Max    int64  `json:"max,omitempty"`
}

// ViewMedia is a media element's handle.
type ViewMedia struct {
	Handle  string `json:"handle"`
	Caption string `json:"caption,omitempty"`
	Kind    string `json:"kind,omitempty"`
}

func viewElements(els []orchestrator.ViewElement) []ViewElement {
	var out []ViewElement
	for _, e := range els {
		v := ViewElement{Kind: e.Kind, Block: e.Block, Text: e.Text, Body: e.Body, Subtitle: e.Subtitle, Color: e.Color}
		for _, p := range e.Pairs {
			v.Pairs = append(v.Pairs, ViewPair{Key: p.Key, Value: p.Value})
		}
		for _, it := range e.Items {
			v.Items = append(v.Items, ViewItem{Label: it.Label, Hint: it.Hint, Intent: it.Intent, Slots: it.Slots, Value: it.Value})
		}
		if c := e.Choice; c != nil {
			v.Choice = &ViewChoice{Mode: c.Mode, Prompt: c.Prompt, Intent: c.Intent, Slot: c.Slot, Min: c.Min, Max: c.Max}
		}
		if m := e.Media; m != nil {
			v.Media = &ViewMedia{Handle: m.Handle, Caption: m.Caption, Kind: m.Kind}
		}
		out = append(out, v)
	}
	return out
}

// NewFrame builds the frame of a turn's outcome (nil: no turn, outcome
// status) in the session st describes, with the trace lines the turn
// wrote.
func NewFrame(m session.Meta, st *Status, out *orchestrator.Outcome, outcome string, events []byte) *Frame {
	f := &Frame{Frame: FrameVersion, Outcome: outcome, State: st.State, Description: st.Description,
		View: st.View, ViewElements: viewElements(st.ViewDoc), AllowedIntents: st.Intents, World: st.World,
		Done: st.Done, Exit: st.Exit}
	f.Session = FrameSession{ID: m.ID, Key: m.Key, AppID: m.AppID, Story: m.Story, StoryHash: m.StoryHash, Turn: st.Turn,
		Trace: m.Trace, ForkedFrom: m.ForkedFrom}
	if f.AllowedIntents == nil {
		f.AllowedIntents = []IntentInfo{}
	}
	if st.ViewErr != nil {
		f.ViewError = st.ViewErr.Error()
	}
	for _, j := range st.Jobs {
		f.Jobs = append(f.Jobs, FrameJob{ID: j.ID, Handler: j.Handler, Status: string(j.Status), Question: j.Question})
	}
	if ev := bytes.TrimSpace(events); len(ev) > 0 {
		f.Events = jsonLines(ev)
	}
	code := ExitOK
	if out != nil {
		f.fill(out)
		code = OutcomeCode(out)
	}
	f.Status = FrameStatus{Code: code, Name: StatusName(code)}
	return f
}

// fill copies a turn's outcome (and its background turns') into f.
func (f *Frame) fill(out *orchestrator.Outcome) {
	for _, b := range out.Background {
		f.Says = append(f.Says, b.Says...)
		f.fillCalls(b)
	}
	if out.Outcome != orchestrator.OutcomeTransitioned || f.Outcome == "" {
		f.Outcome = out.Outcome // a refused or faulted start is that
	}
	f.From = out.From
	f.Says = append(f.Says, out.Says...)
	f.Rejection = out.Rejection
	if out.Err != nil {
		f.Error = out.Err.Error()
	}
	f.fillCalls(out)
	if r := out.Route; r != nil && r.Intent != "" {
		f.Route = &FrameRoute{Tier: r.Tier, Intent: r.Intent, Slots: r.Slots, Confidence: r.Confidence}
	}
}

func (f *Frame) fillCalls(out *orchestrator.Outcome) {
	for i := range out.Handled {
		f.Handled = append(f.Handled, HandledLine(&out.Handled[i]))
	}
	for _, e := range out.HostErrors {
		f.CallErrors = append(f.CallErrors, e.Error())
	}
}

// jsonLines turns JSONL into a JSON array of its lines (each a JSON
// object as the trace holds it).
func jsonLines(b []byte) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('[')
	first := true
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || !json.Valid(line) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(line)
	}
	buf.WriteByte(']')
	return slices.Clip(buf.Bytes())
}

// Mask masks the story's secrets in everything the frame shows (the
// trace lines it carries were masked when they were written).
func (f *Frame) Mask(m *secret.Masker) {
	if m.Empty() {
		return
	}
	t := m.Text
	f.Description, f.View, f.ViewError, f.Error = t(f.Description), t(f.View), t(f.ViewError), t(f.Error)
	for _, l := range [][]string{f.Says, f.CallErrors, f.Handled} {
		for i := range l {
			l[i] = t(l[i])
		}
	}
	for i := range f.ViewElements {
		e := &f.ViewElements[i]
		e.Text, e.Body, e.Subtitle = t(e.Text), t(e.Body), t(e.Subtitle)
		for j := range e.Pairs {
			e.Pairs[j].Value = t(e.Pairs[j].Value)
		}
		for j := range e.Items {
			e.Items[j].Label, e.Items[j].Hint = t(e.Items[j].Label), t(e.Items[j].Hint)
		}
	}
	if r := f.Rejection; r != nil {
		masked := *r
		masked.Message, masked.GuardHint = t(r.Message), t(r.GuardHint)
		f.Rejection = &masked
	}
	if f.World != nil {
		f.World, _ = m.Value(f.World).(map[string]any)
	}
	if f.Route != nil {
		route := *f.Route
		route.Slots, _ = m.Value(route.Slots).(map[string]any)
		f.Route = &route
	}
}

// ErrorFrame is the frame of a call that could not run (a busy session,
// an unknown key): no session state, the status and the error.
func ErrorFrame(ref string, err error) *Frame {
	code := CodeOf(err)
	f := &Frame{Frame: FrameVersion, Outcome: "error", Error: err.Error(), AllowedIntents: []IntentInfo{},
		Status: FrameStatus{Code: code, Name: StatusName(code)}}
	if session.IsKey(ref) {
		f.Session.Key = ref
	} else {
		f.Session.ID = ref
	}
	return f
}
