package trace

import "github.com/kitsoki/kitsoki/plugin"

// Event is one trace line. It is the wire type plugins return as sub-events,
// so there is exactly one definition of the shape.
type Event = plugin.Event

// SchemaVersion is the highest session.header schema_version this package
// reads, and the one it writes.
const SchemaVersion = 1

// KindSessionHeader is the kind of line 1 of every trace file. It is not an
// event: Append refuses it and the reader returns it as a Header.
const KindSessionHeader = "session.header"

// The event kinds kitsoki writes (spec §5, §6). Each has its payload type
// in payloads.go.
const (
	KindTurnInput               = "turn.input"
	KindTurnStart               = "turn.start"
	KindTurnEnd                 = "turn.end"
	KindTurnRouted              = "turn.routed"
	KindMachineIntentAccepted   = "machine.intent_accepted"
	KindMachineValidationFailed = "machine.validation_failed"
	KindMachineTransition       = "machine.transition"
	KindMachineSay              = "machine.say"
	KindMachineStateExited      = "machine.state_exited"
	KindMachineStateEntered     = "machine.state_entered"
	KindMachineError            = "machine.error"
	KindMachineTimeout          = "machine.timeout"
	KindWorldUpdate             = "world.update"
	KindHarnessCalled           = "harness.called"
	KindHarnessDispatched       = "harness.dispatched"
	KindHarnessReturned         = "harness.returned"
	KindHarnessError            = "harness.error"
	KindAgentCallStart          = "agent.call.start"
	KindAgentCallComplete       = "agent.call.complete"
	KindAgentCallError          = "agent.call.error"
	KindJobStarted              = "job.started"
	KindJobAwaitingInput        = "job.awaiting_input"
	KindJobCompleted            = "job.completed"
)

// KindSessionStory is the turn-0 event in which Kitsoki records its story
// (app id, entry file, hash, files). kitsoki does not write it; trace
// to-cassette reads the app id from it (SessionStory). The reader accepts
// every other kind too, verbatim.
const KindSessionStory = "session.story"

// SeedIntent is the intent name on the turn-0 machine.transition written when
// a flow fixture seeds a session.
const SeedIntent = "__seed__"

// Redacted replaces secret values and sensitive header values in payloads.
const Redacted = "REDACTED"
