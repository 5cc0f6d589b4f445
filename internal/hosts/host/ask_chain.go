package host

import (
	"context"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// An agent call goes through the host as a chain of steps around the
// agent, outermost first:
//
//	callID    the live call_id (from the next seq) and the request's deadline
//	episode   a replaying agent's episode: the cassette call_id, episode_id, match_idx
//	budget    the spending caps: a cap reached stops the run; the answer's cost is charged
//	trace     agent.call.start before; agent.call.complete or .error after
//	fallback  schema_invalid from a fallback-eligible agent: once more on agent.claude
//	validate  the submission against with.schema
//	record    the sub-event contract, then the sub-events into the trace
//	deadline  the hard deadline; a late answer or one it caused is deadline_exceeded
//	askAgent  Ask inline (agent.Inline) or on a worker goroutine, abandoned when the context ends
//
// Each step does its part before and/or after calling next, the rest of
// the chain; a step that has nothing to do passes the answer up unchanged.
// A domain failure (the call failed) travels up in answer.err and is
// traced and bound; a returned error (the trace cannot be written) stops
// the run.

// askCall is one agent call on its way through the chain: what prepare
// decided from the invoke, and what the steps fill in on the way down.
// A fallback goes on with a copy naming agent.claude.
type askCall struct {
	verb    string
	call    *Call       // the invoke being dispatched
	alias   string      // the agent asked ("" = the built-in claude path)
	agent   agent.Agent // that agent
	ac      *agent.Call // the call value handed to agent
	persona *agent.Persona
	schema  *schema.Schema
	req     *agent.AskRequest
	timeout time.Duration
	route   *Route // nil unless a pin, an eval or a profile routes the invoke
	// choice is the profile the default agent's call went to (a
	// Selection's), nil when none applied.
	choice *Choice

	start time.Time     // when the call began (callID)
	ep    agent.Episode // the recorded episode answering (episode)

	// Storage for what prepare builds and the trace step writes, so one
	// allocation holds the call: req points at reqv, ac at acv (a
	// fallback's copy gets an agent.Call of its own), and ev is the
	// envelope of each trace line the call writes (sinks copy it).
	reqv agent.AskRequest
	acv  agent.Call
	ev   plugin.Event
}

// answer is what comes back up the chain.
type answer struct {
	resp       *agent.AskResponse // the agent's response; nil when it gave none
	submission any                // the validated submission (validate)
	err        *agent.AskError    // the call's failure; nil on success
	// raw is the agent's own error, as askAgent got it; the deadline step
	// turns it into err.
	raw error
	// answered is the call whose agent gave this answer: the fallback's
	// when there was one.
	answered *agent.Call
	subst    *trace.Substitution // set when fallback asked agent.claude
}

// askFunc runs an agent call from some step on.
type askFunc func(ctx context.Context, c *askCall) (answer, error)

// askStep is one step: it runs the rest of the chain by calling next.
type askStep func(ctx context.Context, c *askCall, next askFunc) (answer, error)

// chain composes steps around final, steps[0] outermost.
func chain(final askFunc, steps ...askStep) askFunc {
	f := final
	for i := len(steps) - 1; i >= 0; i-- {
		step, next := steps[i], f
		f = func(ctx context.Context, c *askCall) (answer, error) { return step(ctx, c, next) }
	}
	return f
}

// askChain is the chain every agent call of h goes through.
func (h *Host) askChain() askFunc {
	return chain(h.askAgent,
		h.stepCallID,
		h.stepEpisode,
		h.stepBudget,
		h.stepTrace,
		h.stepFallback,
		stepValidate,
		h.stepRecord,
		h.stepDeadline,
	)
}
