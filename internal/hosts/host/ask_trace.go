package host

import (
	"context"
	"errors"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// stepTrace writes agent.call.start before the call and, after it,
// agent.call.complete or agent.call.error with the duration and the
// persona and model of the agent that answered. A trace that cannot be
// written is a TraceError: the call's answer is dropped and the run stops.
func (h *Host) stepTrace(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	c.ev = plugin.Event{Turn: c.call.Turn, StatePath: c.call.State, CallID: c.req.CallID, EpisodeID: c.ep.ID, MatchIdx: c.ep.MatchIdx}
	if err := c.call.SinkOr(h.sink).AppendPayload(&c.ev, h.startPayload(c)); err != nil {
		return answer{}, &TraceError{err}
	}
	a, err := next(ctx, c)
	if err != nil {
		return a, err
	}
	if a.err == nil {
		a.err = unstorableAnswer(a)
	}
	durMS := h.clock.Now().Sub(c.start).Milliseconds()
	answered := a.answered
	if answered == nil {
		answered = c.ac
	}
	ref, err := h.keepTranscript(c, &a)
	if err != nil {
		return answer{}, &TraceError{err}
	}
	var closing trace.Payload
	if a.err != nil {
		// error_kind carries the kind on its own, so no masking of the
		// error text can change it.
		p := trace.AgentCallError{Verb: c.verb, DurationMS: durMS, Error: trace.StorableText(a.err.Error()), ErrorKind: string(a.err.Kind), Substitution: a.subst, TranscriptRef: ref}
		p.Agent, p.Model = describe(answered)
		closing = p
	} else {
		var meta map[string]any
		if a.resp != nil {
			meta = a.resp.Meta
		}
		p := trace.AgentCallComplete{Verb: c.verb, DurationMS: durMS,
			Response: trace.AgentResponse{Submission: a.submission, Meta: meta}, Meta: meta, Substitution: a.subst, TranscriptRef: ref}
		p.Agent, p.Model = describe(answered)
		closing = p
	}
	c.ev = plugin.Event{Turn: c.call.Turn, StatePath: c.call.State, CallID: c.req.CallID}
	if err := c.call.SinkOr(h.sink).AppendPayload(&c.ev, closing); err != nil {
		return answer{}, &TraceError{err}
	}
	return a, nil
}

// keepTranscript writes the call's agent-action transcript beside the
// trace (when the transport gave one and the sink keeps transcripts) and
// returns the reference the closing event carries. A transcript that
// cannot be written as one (an event that is not a JSON line) fails the
// call as plugin_crash; failing to store it is a trace error.
func (h *Host) keepTranscript(c *askCall, a *answer) (*trace.TranscriptRef, error) {
	t := transcriptOf(a)
	if t == nil {
		return nil, nil
	}
	ref, err := trace.WriteTranscript(c.call.SinkOr(h.sink), c.req.CallID, t)
	if errors.Is(err, trace.ErrBadTranscript) {
		if a.err == nil {
			a.err = agent.Errorf(agent.KindPluginCrash, "the agent's transcript cannot be kept: %v", err)
		}
		return nil, nil
	}
	return ref, err
}

// transcriptOf is the transcript of an answer: the response's, else, for
// a failure, the one the error carries.
func transcriptOf(a *answer) *trace.Transcript {
	if a.resp != nil && a.resp.Transcript != nil {
		return a.resp.Transcript
	}
	if a.err != nil && a.err.Transcript != nil {
		return a.err.Transcript
	}
	if ae, ok := agent.AsAskError(a.raw); ok {
		return ae.Transcript
	}
	return nil
}

// startPayload is the agent.call.start of c: verb, prompt, persona and
// model, the route's profile, effort and pin, and the verb's input
// ({schema_path} on the built-in path, {schema_present: true} on a
// plugin's, when the call has a schema).
func (h *Host) startPayload(c *askCall) trace.AgentCallStart {
	p := trace.AgentCallStart{Verb: c.verb, Prompt: c.req.Prompt, Purpose: c.call.Purpose}
	p.Agent, p.Model = describe(c.ac)
	c.route.describeStart(&p)
	if p.Effort == "" && c.ac != nil {
		p.Effort = c.ac.Effort // the persona's effort:
	}
	if c.schema != nil {
		if c.alias == "" {
			p.Input = map[string]any{"schema_path": c.schema.Path}
		} else {
			p.Input = h.schemaPresent()
		}
	}
	return p
}

// schemaPresent is the input of a plugin's agent.call.start when the call
// has a schema, {schema_present: true}: one map per host, built at its
// first use, shared by every line (nothing writes to a payload).
func (h *Host) schemaPresent() map[string]any {
	h.presentOnce.Do(func() { h.present = map[string]any{"schema_present": true} })
	return h.present
}

// describe returns the persona and the model of a call, as an agent event
// payload records them.
func describe(ac *agent.Call) (persona, model string) {
	if ac.Persona != nil {
		persona = ac.Persona.Name
	}
	return persona, ac.Model
}

// unstorableAnswer is the failure of an answer the journal cannot hold (a
// NUL byte, text not in Unicode NFC, NaN in its submission or meta): a
// schema_invalid the story handles like any other (on_error, a retry or
// a fallback), instead of a trace error that would end the run, and end
// every resume of it the same way. nil when the answer can be kept.
func unstorableAnswer(a answer) *agent.AskError {
	where, err := "submission", trace.Storable(a.submission)
	if err == nil && a.resp != nil {
		where, err = "meta", trace.Storable(a.resp.Meta)
	}
	var se *trace.StorableError
	if !errors.As(err, &se) {
		return nil
	}
	if se.Path != "" {
		where += "." + se.Path
	}
	if strings.HasPrefix(se.Path, "[") {
		where = strings.Replace(where, ".[", "[", 1)
	}
	return agent.Errorf(agent.KindSchemaInvalid, "the answer cannot be kept in the journal: %v at %s (the trace stores no NUL byte, only Unicode NFC text and finite numbers); the agent must answer without it",
		se.Err, where)
}
