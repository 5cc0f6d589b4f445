package host

import (
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// ProfileClaude is the profile name of the built-in claude path: an agent
// call with no agent_plugins alias, answered by the agent set WithBuiltin.
const ProfileClaude = "claude"

// Route overrides where one invoke's agent calls go and with which model
// and effort. Pins (an invoke's selection: backed by eval evidence) and
// eval runs (one route per candidate) produce routes; an invoke with no
// route goes where its agent: field says.
//
// A profile is either an agent_plugins alias (Alias set) or the built-in
// claude path (Alias empty), optionally through a providers: entry
// (Provider set).
type Route struct {
	// Profile is the profile name recorded in agent.call.start.
	Profile string
	// Alias is the agent_plugins alias to call; "" is the built-in path.
	Alias string
	// Provider is a providers: entry for the built-in path ("" for none).
	Provider string
	// Model, when set, is the model the call runs on: it wins over the
	// provider's, the persona's and the declaration's (resolveModel).
	Model string
	// Effort is handed to the transport in agent.Call.Effort.
	Effort string
	// Pin says whether a selection: pin applied; nil for routes that are
	// not pins (eval candidates).
	Pin *PinState
}

// PinState records what became of an invoke's selection: pin.
type PinState struct {
	// Applied is true when the pin's evidence held and the call goes to
	// the pinned profile.
	Applied bool
	// Evidence is the report the pin cites.
	Evidence string
	// Reason says why a pin did not apply (missing, stale, failing, ...).
	Reason string
}

// WithRoutes installs per-invoke routes. The map is read, never modified.
func WithRoutes(routes map[*story.Invoke]*Route) Option {
	return func(h *Host) { h.routes = routes }
}

// routeFor returns the route of the call's invoke, or nil.
func (h *Host) routeFor(call *Call) *Route {
	if call.Invoke == nil || h.routes == nil {
		return nil
	}
	return h.routes[call.Invoke]
}

// alias is the agent_plugins alias the call goes to ("" = built-in path).
func (r *Route) alias(inv *story.Invoke) string {
	if r != nil {
		return r.Alias
	}
	if inv != nil {
		return inv.Agent
	}
	return ""
}

// describeStart records the profile, effort and pin outcome in an
// agent.call.start payload (the model is recorded by describe).
func (r *Route) describeStart(payload *trace.AgentCallStart) {
	if r == nil {
		return
	}
	payload.Profile, payload.Effort = r.Profile, r.Effort
	if r.Pin != nil {
		applied := r.Pin.Applied
		payload.Pinned = &applied
		payload.PinEvidence, payload.PinReason = r.Pin.Evidence, r.Pin.Reason
	}
}
