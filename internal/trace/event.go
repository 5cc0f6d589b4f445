package trace

import "github.com/kitsoki/kitsoki/pkg/plugin"

// Event is one trace line. It is the wire type plugins return as sub-events,
// so there is exactly one definition of the shape.
type Event = plugin.Event

// SchemaVersion is the highest session.header schema_version this package
// reads, and the one it writes.
const SchemaVersion = 1

// KindSessionHeader is the kind of line 1 of every trace file. It is not an
// event: Append refuses it and the reader returns it as a Header.
const KindSessionHeader = "session.header"

// Event kinds written during a turn (spec §5).
const (
	KindTurnInput                = "turn.input"
	KindTurnStart                = "turn.start"
	KindTurnEnd                  = "turn.end"
	KindMachineIntentAccepted    = "machine.intent_accepted"
	KindMachineValidationFailed  = "machine.validation_failed"
	KindMachineTransition        = "machine.transition"
	KindMachineSay               = "machine.say"
	KindMachineStateExited       = "machine.state_exited"
	KindMachineStateEntered      = "machine.state_entered"
	KindMachineError             = "machine.error"
	KindWorldUpdate              = "world.update"
	KindHarnessCalled            = "harness.called"
	KindHarnessDispatched        = "harness.dispatched"
	KindHarnessReturned          = "harness.returned"
	KindHarnessError             = "harness.error"
	KindAgentCallStart           = "agent.call.start"
	KindAgentCallComplete        = "agent.call.complete"
	KindAgentCallError           = "agent.call.error"
	KindSessionStory             = "session.story"
	KindStoryChanged             = "story.changed"
	KindAgentToolCall            = "agent.tool_call"
	KindAgentStream              = "agent.stream"
	KindAgentOffPathQuestion     = "agent.off_path.question"
	KindAgentOffPathAnswer       = "agent.off_path.answer"
	KindMachineOffPathEntered    = "machine.off_path_entered"
	KindMachineOffPathExited     = "machine.off_path_exited"
	KindMachineTimeout           = "machine.timeout"
	KindSchedulerSubmitted       = "scheduler.submitted"
	KindSchedulerCompleted       = "scheduler.completed"
	KindMachineGateDecided       = "machine.gate_decided"
	KindMachineWriteModeGranted  = "machine.write_mode_granted"
	KindArtifactEmitted          = "artifact.emitted"
	KindIDEContextCaptured       = "ide.context_captured"
	KindTurnContextRouteOverride = "turn.context_route_overridden"
)

// Kind prefixes for families of later kinds (spec §5) and for kitsoki's own
// extension kinds (spec §10).
const (
	KindPrefixMining          = "mining."
	KindPrefixDynamicWorkflow = "dynamic.workflow."
	KindPrefixExtension       = "kitsoki."
)

// SeedIntent is the intent name on the turn-0 machine.transition written when
// a flow fixture seeds a session.
const SeedIntent = "__seed__"

// Redacted replaces secret values and sensitive header values in payloads.
const Redacted = "REDACTED"
