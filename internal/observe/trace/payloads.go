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
// Each type encodes itself field by field in the order of its JSON keys,
// which is sorted, so its line is byte for byte what encoding/json writes
// for the same payload as a map, without sorting keys per event. The
// json tags say the same thing for Decode and for the schema test: a
// field with omitempty or omitzero is left out exactly when the encoder
// leaves it out. Fields that carry open user data (world values, with:
// arguments, submissions, meta) are any or map[string]any and go through
// the generic walk, masked like every other payload value; kitsoki's own
// key names are never masked.
type Payload interface {
	Kind() string
	fields
}

// fields is a typed object: it writes its own key/value pairs.
type fields interface {
	appendFields(w *objWriter)
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
	Slots      map[string]any `json:"slots,omitzero"`
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
	Verb         string         `json:"verb"`
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
	Verb         string        `json:"verb"`
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
	return nil, false
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

// The encoders. Keys are written in sorted order, exactly when encoding/json
// would write them under the field's tag.

func (p TurnInput) appendFields(w *objWriter) {
	w.str("input", p.Input)
	w.str("intent", p.Intent)
}

func (p TurnStart) appendFields(w *objWriter) {
	if p.Direct {
		w.boolean("direct", true)
	}
	w.str("input", p.Input)
	w.int("turn", p.Turn)
}

func (p TurnRouted) appendFields(w *objWriter) {
	w.value("confidence", p.Confidence)
	w.str("input", p.Input)
	w.strOmit("intent", p.Intent)
	w.strOmit("reason", p.Reason)
	if len(p.Slots) > 0 {
		w.object("slots", p.Slots)
	}
	w.str("tier", p.Tier)
}

func (p TurnEnd) appendFields(w *objWriter) {
	w.strOmit("code", p.Code)
	w.strOmit("error", p.Error)
	w.str("outcome", p.Outcome)
	w.strOmit("to", p.To)
	w.strOmit("view", p.View)
}

func (p MachineIntentAccepted) appendFields(w *objWriter) {
	w.str("intent", p.Intent)
	w.object("slots", p.Slots)
}

func (p MachineValidationFailed) appendFields(w *objWriter) {
	w.str("code", p.Code)
	w.strOmit("guard_hint", p.GuardHint)
	w.str("intent", p.Intent)
	w.str("message", p.Message)
	w.str("state", p.State)
}

func (p MachineTransition) appendFields(w *objWriter) {
	w.str("from", p.From)
	w.str("intent", p.Intent)
	if p.Slots != nil {
		w.object("slots", p.Slots)
	}
	w.str("to", p.To)
}

func (p MachineSay) appendFields(w *objWriter)          { w.str("text", p.Text) }
func (p MachineStateExited) appendFields(w *objWriter)  { w.str("state", p.State) }
func (p MachineStateEntered) appendFields(w *objWriter) { w.str("state", p.State) }

func (p MachineError) appendFields(w *objWriter) {
	w.str("error", p.Error)
	w.str("intent", p.Intent)
	w.object("slots", p.Slots)
	w.str("state", p.State)
}

func (p MachineTimeout) appendFields(w *objWriter) {
	w.str("after", p.After)
	w.str("state", p.State)
	w.str("target", p.Target)
}

func (p WorldUpdate) appendFields(w *objWriter) {
	if p.Increment != nil {
		w.counts("increment", p.Increment)
	}
	w.strOmit("namespace", p.Namespace)
	if p.Set != nil {
		w.object("set", p.Set)
	}
	w.strOmit("skipped", p.Skipped)
}

func (p HarnessCalled) appendFields(w *objWriter) {
	w.object("args", p.Args)
	w.boolean("background", p.Background)
	w.str("namespace", p.Namespace)
}

func (p HarnessDispatched) appendFields(w *objWriter) {
	w.object("args", p.Args)
	w.boolean("background", p.Background)
	w.str("namespace", p.Namespace)
	w.boolean("rerender_fell_back", p.RerenderFellBack)
}

func (p HarnessReturned) appendFields(w *objWriter) {
	if p.Data != nil {
		w.object("data", p.Data)
	}
	w.strOmit("error", p.Error)
	w.str("namespace", p.Namespace)
}

func (p JobStarted) appendFields(w *objWriter) {
	w.strOmit("call", p.Call)
	w.str("handler", p.Handler)
	w.str("job_id", p.JobID)
	w.str("state", p.State)
}

func (p JobAwaitingInput) appendFields(w *objWriter) {
	if p.Fields != nil {
		w.object("fields", p.Fields)
	}
	w.str("handler", p.Handler)
	w.str("job_id", p.JobID)
	w.str("prompt", p.Prompt)
	w.str("state", p.State)
}

func (p JobCompleted) appendFields(w *objWriter) {
	w.strOmit("error", p.Error)
	w.str("handler", p.Handler)
	w.str("job_id", p.JobID)
	w.str("state", p.State)
	w.str("status", p.Status)
}

func (p HarnessError) appendFields(w *objWriter) {
	w.intOmit("cap", int64(p.Cap))
	w.intOmit("depth", int64(p.Depth))
	w.strOmit("error", p.Error)
	w.intOmit("max_depth", int64(p.MaxDepth))
	w.strOmit("message", p.Message)
	w.strOmit("phase", p.Phase)
	w.strOmit("prior", p.Prior)
	w.strOmit("reason", p.Reason)
	w.strOmit("target", p.Target)
}

func (p AgentCallStart) appendFields(w *objWriter) {
	w.strOmit("agent", p.Agent)
	w.strOmit("effort", p.Effort)
	if p.Input != nil {
		w.value("input", p.Input)
	}
	w.strOmit("model", p.Model)
	w.strOmit("pin_evidence", p.PinEvidence)
	w.strOmit("pin_reason", p.PinReason)
	if p.Pinned != nil {
		w.boolean("pinned", *p.Pinned)
	}
	w.strOmit("profile", p.Profile)
	w.strOmit("prompt", p.Prompt)
	w.strOmit("purpose", p.Purpose)
	w.str("verb", p.Verb)
}

func (p AgentCallComplete) appendFields(w *objWriter) {
	w.strOmit("agent", p.Agent)
	w.int("duration_ms", p.DurationMS)
	if p.Meta != nil {
		w.object("meta", p.Meta)
	}
	w.strOmit("model", p.Model)
	if p.Response != nil {
		w.value("response", p.Response)
	}
	if p.Substitution != nil {
		w.typed("substitution", *p.Substitution)
	}
	w.str("verb", p.Verb)
}

func (p AgentCallError) appendFields(w *objWriter) {
	w.strOmit("agent", p.Agent)
	w.int("duration_ms", p.DurationMS)
	w.str("error", p.Error)
	w.str("error_kind", p.ErrorKind)
	w.strOmit("model", p.Model)
	if p.Substitution != nil {
		w.typed("substitution", *p.Substitution)
	}
	w.str("verb", p.Verb)
}

func (p AgentResponse) appendFields(w *objWriter) {
	w.object("meta", p.Meta)
	w.value("submission", p.Submission)
}

func (p Substitution) appendFields(w *objWriter) {
	w.str("fallback_plugin", p.FallbackPlugin)
	w.str("original_plugin", p.OriginalPlugin)
	w.str("reason", p.Reason)
}
