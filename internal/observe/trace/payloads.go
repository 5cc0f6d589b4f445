package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Payload is the typed payload of an event kind kitsoki writes: one Go
// type per kind, shared by the writers (the orchestrator, the host, the
// cassette handler) and the readers (the flow runner, evals, trace
// to-cassette). Writers hand one to Sink.AppendPayload; readers of a trace
// file turn an Event's map back into one with Decode.
//
// encoding/json writes each type by its json tags. The fields are
// declared in the sorted order of their keys, so a typed payload's line
// is byte for byte the line of the same payload given as a map. Fields
// that carry open user data (world values, with: arguments, submissions,
// meta) are any or map[string]any; every value, typed or open, is checked
// and masked by the same rules (each type's scrub method names its
// fields), and kitsoki's own key names are never masked.
type Payload interface {
	Kind() string
	scrubbable
}

// TurnInput is turn.input: what the user typed, and the intent (empty on
// the free-text path).
type TurnInput struct {
	Input  string `json:"input"`
	Intent string `json:"intent"`
}

// TurnStart is turn.start. Direct is true for a turn driven by an intent.
type TurnStart struct {
	Direct bool   `json:"direct,omitempty"`
	Input  string `json:"input"`
	Turn   int64  `json:"turn"`
}

// TurnRouted is turn.routed: how a free-text turn was resolved. Tier is
// exact, synonym, template, default_intent or router; Intent is empty when
// no tier resolved it (the router said none, or was not confident enough).
type TurnRouted struct {
	Confidence float64        `json:"confidence"`
	Input      string         `json:"input"`
	Intent     string         `json:"intent,omitempty"`
	Reason     string         `json:"reason,omitempty"` // the contextual tier's reason
	Slots      map[string]any `json:"slots,omitempty"`
	Tier       string         `json:"tier"`
}

// TurnEnd is turn.end: outcome transitioned (to, view), rejected (code) or
// error (error).
type TurnEnd struct {
	Code    string `json:"code,omitempty"`
	Error   string `json:"error,omitempty"`
	Outcome string `json:"outcome"`
	To      string `json:"to,omitempty"`
	View    string `json:"view,omitempty"`
}

// MachineIntentAccepted is machine.intent_accepted: the intent and its
// slots, defaults filled.
type MachineIntentAccepted struct {
	Intent string         `json:"intent"`
	Slots  map[string]any `json:"slots"`
}

// MachineValidationFailed is machine.validation_failed: a rejected intent.
type MachineValidationFailed struct {
	Code      string `json:"code"`
	GuardHint string `json:"guard_hint,omitempty"`
	Intent    string `json:"intent"`
	Message   string `json:"message"`
	State     string `json:"state"`
}

// MachineTransition is machine.transition. The seed transition of turn 0
// has no slots (nil); every other one has them, {} when there are none.
type MachineTransition struct {
	From   string         `json:"from"`
	Intent string         `json:"intent"`
	Slots  map[string]any `json:"slots,omitzero"`
	To     string         `json:"to"`
}

// MachineSay is machine.say: a say: effect's rendered text.
type MachineSay struct {
	Text string `json:"text"`
}

// MachineStateExited is machine.state_exited: the state being left.
type MachineStateExited struct {
	State string `json:"state"`
}

// MachineStateEntered is machine.state_entered: the state being entered.
type MachineStateEntered struct {
	State string `json:"state"`
}

// MachineError is machine.error: a fault in an expression or effect
// aborted the turn.
type MachineError struct {
	Error  string         `json:"error"`
	Intent string         `json:"intent"`
	Slots  map[string]any `json:"slots"`
	State  string         `json:"state"`
}

// MachineTimeout is machine.timeout: a state's timeout came due (after
// After, as a Go duration) and the machine moves to Target.
type MachineTimeout struct {
	After  string `json:"after"`
	State  string `json:"state"`
	Target string `json:"target"`
}

// WorldUpdate is world.update, one of three shapes: Set with one key,
// Increment with one key, or Namespace with Skipped "cached" for a once:
// invoke whose binds are all set.
type WorldUpdate struct {
	Increment map[string]int64 `json:"increment,omitzero"`
	Namespace string           `json:"namespace,omitempty"`
	Set       map[string]any   `json:"set,omitzero"`
	Skipped   string           `json:"skipped,omitempty"`
}

// HarnessCalled is harness.called: an invoke queued, its with: as rendered
// then.
type HarnessCalled struct {
	Args       map[string]any `json:"args"`
	Background bool           `json:"background"`
	Namespace  string         `json:"namespace"`
}

// HarnessDispatched is harness.dispatched: an invoke sent, its with: as
// passed (RerenderFellBack: re-rendering failed and the queued args went).
type HarnessDispatched struct {
	Args             map[string]any `json:"args"`
	Background       bool           `json:"background"`
	Namespace        string         `json:"namespace"`
	RerenderFellBack bool           `json:"rerender_fell_back"`
}

// HarnessReturned is harness.returned: the call's data (when it returned
// any) and its error (when it failed).
type HarnessReturned struct {
	Data      map[string]any `json:"data,omitzero"`
	Error     string         `json:"error,omitempty"`
	Namespace string         `json:"namespace"`
}

// HarnessError is harness.error: the engine stopped a loop. Post-bind
// emits: Phase, Error, and for the pass cap Depth and MaxDepth. on_error
// redirects: Reason "on_error.depth_cap_exceeded", Prior, Target, Depth,
// Cap, Message.
type HarnessError struct {
	Cap      int    `json:"cap,omitempty"`
	Depth    int    `json:"depth,omitempty"`
	Error    string `json:"error,omitempty"`
	MaxDepth int    `json:"max_depth,omitempty"`
	Message  string `json:"message,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Prior    string `json:"prior,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Target   string `json:"target,omitempty"`
}

// AgentCallStart is agent.call.start. Input is verb-specific
// ({schema_path} on the built-in path, {schema_present: true} on the
// plugin path, a cassette's input as recorded). Profile, Effort and the
// pin fields are set for calls an eval candidate or a selection: pin
// routes; Pinned is nil unless a pin was considered.
type AgentCallStart struct {
	Agent       string `json:"agent,omitempty"`
	Effort      string `json:"effort,omitempty"`
	Input       any    `json:"input,omitempty"`
	Model       string `json:"model,omitempty"`
	PinEvidence string `json:"pin_evidence,omitempty"`
	PinReason   string `json:"pin_reason,omitempty"`
	Pinned      *bool  `json:"pinned,omitzero"`
	Profile     string `json:"profile,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	// Purpose says why kitsoki made the call when it was not an invoke:
	// "route" for the router agent of a free-text turn.
	Purpose string `json:"purpose,omitempty"`
	Verb    string `json:"verb"`
}

// AgentCallComplete is agent.call.complete. Response is an AgentResponse
// on the host's path and the episode's response (JSON or text) on a
// cassette handler's.
type AgentCallComplete struct {
	Agent        string         `json:"agent,omitempty"`
	DurationMS   int64          `json:"duration_ms"`
	Meta         map[string]any `json:"meta,omitzero"`
	Model        string         `json:"model,omitempty"`
	Response     any            `json:"response,omitempty"`
	Substitution *Substitution  `json:"substitution,omitzero"`
	// TranscriptRef points at the call's agent-action sidecar, when the
	// transport gave a transcript.
	TranscriptRef *TranscriptRef `json:"transcript_ref,omitzero"`
	Verb          string         `json:"verb"`
}

// AgentCallError is agent.call.error. Error is the AskError text
// ("agent: <kind>: <detail>"); ErrorKind is its kind on its own, so no
// masking of the text can change it.
type AgentCallError struct {
	Agent        string        `json:"agent,omitempty"`
	DurationMS   int64         `json:"duration_ms"`
	Error        string        `json:"error"`
	ErrorKind    string        `json:"error_kind"`
	Model        string        `json:"model,omitempty"`
	Substitution *Substitution `json:"substitution,omitzero"`
	// TranscriptRef points at the transcript captured before the call
	// failed, when there is one.
	TranscriptRef *TranscriptRef `json:"transcript_ref,omitzero"`
	Verb          string         `json:"verb"`
}

// AgentResponse is the response of an agent.call.complete on the host's
// path: the validated submission and the transport's meta (null when
// there is none).
type AgentResponse struct {
	Meta       map[string]any `json:"meta"`
	Submission any            `json:"submission"`
}

// Substitution says that a schema-invalid answer was retried on the
// fallback agent.
type Substitution struct {
	FallbackPlugin string `json:"fallback_plugin"`
	OriginalPlugin string `json:"original_plugin"`
	Reason         string `json:"reason"`
}

// SessionStory is session.story, which Kitsoki writes at turn 0 and
// kitsoki only reads (trace to-cassette takes the app id from it). It is
// not a Payload: kitsoki never writes it.
type SessionStory struct {
	AppID string            `json:"app_id"`
	Entry string            `json:"entry,omitempty"`
	Hash  string            `json:"hash,omitempty"`
	Files map[string]string `json:"files,omitempty"`
}

// JobStarted is job.started: a background job started (in the turn whose
// effect started it). Call is the invoke's id:, when it has one.
type JobStarted struct {
	Call    string `json:"call,omitempty"`
	Handler string `json:"handler"`
	JobID   string `json:"job_id"`
	State   string `json:"state"`
}

// JobAwaitingInput is job.awaiting_input: a background job asked for a
// clarification (written in the turn that delivers the question).
type JobAwaitingInput struct {
	Fields  map[string]any `json:"fields,omitzero"`
	Handler string         `json:"handler"`
	JobID   string         `json:"job_id"`
	Prompt  string         `json:"prompt"`
	State   string         `json:"state"`
}

// JobCompleted is job.completed: a background job ended done, failed or
// cancelled (written in the turn that delivers its completion). State is
// the state that started it.
type JobCompleted struct {
	Error   string `json:"error,omitempty"`
	Handler string `json:"handler"`
	JobID   string `json:"job_id"`
	State   string `json:"state"`
	Status  string `json:"status"`
}

func (TurnInput) Kind() string               { return KindTurnInput }
func (TurnStart) Kind() string               { return KindTurnStart }
func (TurnEnd) Kind() string                 { return KindTurnEnd }
func (TurnRouted) Kind() string              { return KindTurnRouted }
func (MachineIntentAccepted) Kind() string   { return KindMachineIntentAccepted }
func (MachineValidationFailed) Kind() string { return KindMachineValidationFailed }
func (MachineTransition) Kind() string       { return KindMachineTransition }
func (MachineSay) Kind() string              { return KindMachineSay }
func (MachineStateExited) Kind() string      { return KindMachineStateExited }
func (MachineStateEntered) Kind() string     { return KindMachineStateEntered }
func (MachineError) Kind() string            { return KindMachineError }
func (MachineTimeout) Kind() string          { return KindMachineTimeout }
func (WorldUpdate) Kind() string             { return KindWorldUpdate }
func (HarnessCalled) Kind() string           { return KindHarnessCalled }
func (HarnessDispatched) Kind() string       { return KindHarnessDispatched }
func (HarnessReturned) Kind() string         { return KindHarnessReturned }
func (HarnessError) Kind() string            { return KindHarnessError }
func (AgentCallStart) Kind() string          { return KindAgentCallStart }
func (AgentCallComplete) Kind() string       { return KindAgentCallComplete }
func (AgentCallError) Kind() string          { return KindAgentCallError }
func (JobStarted) Kind() string              { return KindJobStarted }
func (JobAwaitingInput) Kind() string        { return KindJobAwaitingInput }
func (JobCompleted) Kind() string            { return KindJobCompleted }

// NewPayload returns a new, empty payload of a kind kitsoki writes, ready
// for Decode; ok is false for any other kind.
func NewPayload(kind string) (p Payload, ok bool) {
	switch kind {
	case KindTurnInput:
		return &TurnInput{}, true
	case KindTurnStart:
		return &TurnStart{}, true
	case KindTurnEnd:
		return &TurnEnd{}, true
	case KindTurnRouted:
		return &TurnRouted{}, true
	case KindMachineIntentAccepted:
		return &MachineIntentAccepted{}, true
	case KindMachineValidationFailed:
		return &MachineValidationFailed{}, true
	case KindMachineTransition:
		return &MachineTransition{}, true
	case KindMachineSay:
		return &MachineSay{}, true
	case KindMachineStateExited:
		return &MachineStateExited{}, true
	case KindMachineStateEntered:
		return &MachineStateEntered{}, true
	case KindMachineError:
		return &MachineError{}, true
	case KindMachineTimeout:
		return &MachineTimeout{}, true
	case KindWorldUpdate:
		return &WorldUpdate{}, true
	case KindHarnessCalled:
		return &HarnessCalled{}, true
	case KindHarnessDispatched:
		return &HarnessDispatched{}, true
	case KindHarnessReturned:
		return &HarnessReturned{}, true
	case KindHarnessError:
		return &HarnessError{}, true
	case KindAgentCallStart:
		return &AgentCallStart{}, true
	case KindAgentCallComplete:
		return &AgentCallComplete{}, true
	case KindAgentCallError:
		return &AgentCallError{}, true
	case KindJobStarted:
		return &JobStarted{}, true
	case KindJobAwaitingInput:
		return &JobAwaitingInput{}, true
	case KindJobCompleted:
		return &JobCompleted{}, true
	case KindAgentSwitched:
		return &AgentSwitched{}, true
	case KindCostCapReached:
		return &CostCapReached{}, true
	}
	return newJournalPayload(kind)
}

// Decode reads an event's payload (as the reader returns it: a map, numbers
// as json.Number) into dst, a pointer to the typed payload of the event's
// kind, e.g. Decode(ev, &trace.HarnessDispatched{}). Fields dst does not
// know are ignored (Kitsoki's files carry more); open fields (any,
// map[string]any) keep numbers as json.Number, as the reader does.
func Decode(ev *Event, dst any) error {
	want := ""
	switch d := dst.(type) {
	case Payload:
		want = d.Kind()
	case *SessionStory:
		want = KindSessionStory
	default:
		return fmt.Errorf("trace: Decode: %T is not a trace payload type", dst)
	}
	if ev.Kind != want {
		return fmt.Errorf("trace: Decode: turn %d, seq %d: a %s event cannot be read as %s", ev.Turn, ev.Seq, ev.Kind, want)
	}
	b, err := json.Marshal(ev.Payload)
	if err != nil {
		return fmt.Errorf("trace: %s event (turn %d, seq %d): payload: %w", ev.Kind, ev.Turn, ev.Seq, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("trace: %s event (turn %d, seq %d): payload: %w", ev.Kind, ev.Turn, ev.Seq, err)
	}
	return nil
}

// The scrub methods. Each checks and masks the fields of its copy of
// the payload (see scrubber) and returns the copy when a field changed.

func (p TurnInput) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("input", &p.Input)
	s.str("intent", &p.Intent)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p TurnStart) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("input", &p.Input)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p TurnRouted) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.float("confidence", p.Confidence)
	s.str("input", &p.Input)
	s.str("intent", &p.Intent)
	s.str("reason", &p.Reason)
	s.obj("slots", &p.Slots)
	s.str("tier", &p.Tier)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p TurnEnd) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("code", &p.Code)
	s.str("error", &p.Error)
	s.str("outcome", &p.Outcome)
	s.str("to", &p.To)
	s.str("view", &p.View)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineIntentAccepted) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("intent", &p.Intent)
	s.obj("slots", &p.Slots)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineValidationFailed) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("code", &p.Code)
	s.str("guard_hint", &p.GuardHint)
	s.str("intent", &p.Intent)
	s.str("message", &p.Message)
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineTransition) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("from", &p.From)
	s.str("intent", &p.Intent)
	s.obj("slots", &p.Slots)
	s.str("to", &p.To)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineSay) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("text", &p.Text)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineStateExited) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineStateEntered) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineError) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("error", &p.Error)
	s.str("intent", &p.Intent)
	s.obj("slots", &p.Slots)
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p MachineTimeout) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("after", &p.After)
	s.str("state", &p.State)
	s.str("target", &p.Target)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p WorldUpdate) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.counts("increment", &p.Increment)
	s.str("namespace", &p.Namespace)
	s.obj("set", &p.Set)
	s.str("skipped", &p.Skipped)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p HarnessCalled) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.obj("args", &p.Args)
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p HarnessDispatched) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.obj("args", &p.Args)
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p HarnessReturned) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.obj("data", &p.Data)
	s.str("error", &p.Error)
	s.str("namespace", &p.Namespace)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p HarnessError) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("error", &p.Error)
	s.str("message", &p.Message)
	s.str("phase", &p.Phase)
	s.str("prior", &p.Prior)
	s.str("reason", &p.Reason)
	s.str("target", &p.Target)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p AgentCallStart) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("agent", &p.Agent)
	s.str("effort", &p.Effort)
	s.open("input", &p.Input)
	s.str("model", &p.Model)
	s.str("pin_evidence", &p.PinEvidence)
	s.str("pin_reason", &p.PinReason)
	s.str("profile", &p.Profile)
	s.str("prompt", &p.Prompt)
	s.str("purpose", &p.Purpose)
	s.str("verb", &p.Verb)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p AgentCallComplete) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("agent", &p.Agent)
	s.obj("meta", &p.Meta)
	s.str("model", &p.Model)
	s.open("response", &p.Response)
	p.Substitution = s.substitution(p.Substitution)
	p.TranscriptRef = s.transcriptRef(p.TranscriptRef)
	s.str("verb", &p.Verb)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p AgentCallError) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("agent", &p.Agent)
	s.str("error", &p.Error)
	s.str("error_kind", &p.ErrorKind)
	s.str("model", &p.Model)
	p.Substitution = s.substitution(p.Substitution)
	p.TranscriptRef = s.transcriptRef(p.TranscriptRef)
	s.str("verb", &p.Verb)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p AgentResponse) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.obj("meta", &p.Meta)
	s.open("submission", &p.Submission)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p Substitution) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("fallback_plugin", &p.FallbackPlugin)
	s.str("original_plugin", &p.OriginalPlugin)
	s.str("reason", &p.Reason)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

// substitution scrubs an agent call's substitution, returning a masked
// copy when it changed.
func (s *scrubber) substitution(sub *Substitution) *Substitution {
	if sub == nil {
		return nil
	}
	out, changed := s.typed("substitution", *sub)
	if !changed {
		return sub
	}
	masked := out.(Substitution)
	s.changed = true
	return &masked
}

func (p JobStarted) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("call", &p.Call)
	s.str("handler", &p.Handler)
	s.str("job_id", &p.JobID)
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p JobAwaitingInput) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.obj("fields", &p.Fields)
	s.str("handler", &p.Handler)
	s.str("job_id", &p.JobID)
	s.str("prompt", &p.Prompt)
	s.str("state", &p.State)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p JobCompleted) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("error", &p.Error)
	s.str("handler", &p.Handler)
	s.str("job_id", &p.JobID)
	s.str("state", &p.State)
	s.str("status", &p.Status)
	if s.end(c) {
		return p, true
	}
	return nil, false
}
