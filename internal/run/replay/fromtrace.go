package replay

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// FromTrace turns a run's trace into a cassette: one episode per
// dispatched host call, in dispatch order, so the run can be replayed
// (kitsoki run --cassette) or handed over with a bug report. Agent calls
// become host.agent.<verb> episodes that match on handler and phase, keep
// the bound data and describe the exchange in an agent: block; other calls
// match on handler, phase and every argument. appID is used when the trace
// does not name its app (a session.story event).
//
// Calls are paired by namespace in order, so traces whose agent events
// precede turn.input (as Kitsoki writes them) convert the same way.
//
// opts are passed to the cassette (cassette.WithSecrets masks what it writes).
func FromTrace(events []trace.Event, appID string, opts ...cassette.LoadOption) (*Cassette, error) {
	return FromTraceWith(events, appID, nil, opts...)
}

// Transcripts reads the sidecar a transcript_ref points at (nil, nil: the
// call keeps no transcript).
type Transcripts func(ref *trace.TranscriptRef) (*trace.Transcript, error)

// FromTraceWith is FromTrace that also folds each agent call's
// agent-action transcript (read with transcripts, when it is not nil) into
// its episode's agent: block, so a replay writes the same sidecar.
func FromTraceWith(events []trace.Event, appID string, transcripts Transcripts, opts ...cassette.LoadOption) (*Cassette, error) {
	type call struct {
		ns    string
		args  map[string]any
		state string
		phase string // the state its turn began in (the call's own when the trace has no turn.start before it)
		turn  int64
		start *trace.AgentCallStart
		end   *agentEnd
	}
	var open []*call // dispatched, not yet returned
	var lastAgent *call
	var eps []*cassette.Episode
	ids := map[string]bool{}
	turnStart := map[int64]string{} // turn -> the state path of its turn.start
	for i := range events {
		ev := &events[i]
		switch ev.Kind {
		case trace.KindTurnStart:
			if _, ok := turnStart[ev.Turn]; !ok {
				turnStart[ev.Turn] = ev.StatePath
			}
		case trace.KindSessionStory:
			var p trace.SessionStory
			if err := trace.Decode(ev, &p); err != nil {
				return nil, err
			}
			if p.AppID != "" {
				appID = p.AppID
			}
		case trace.KindHarnessDispatched:
			var p trace.HarnessDispatched
			if err := trace.Decode(ev, &p); err != nil {
				return nil, err
			}
			c := &call{ns: p.Namespace, args: p.Args, state: ev.StatePath, phase: ev.StatePath, turn: ev.Turn}
			if s, ok := turnStart[ev.Turn]; ok {
				c.phase = s
			}
			open = append(open, c)
			if strings.HasPrefix(p.Namespace, host.AgentNamespace) {
				lastAgent = c
			}
		case trace.KindAgentCallStart:
			if lastAgent != nil && lastAgent.start == nil {
				var p trace.AgentCallStart
				if err := trace.Decode(ev, &p); err != nil {
					return nil, err
				}
				lastAgent.start = &p
			}
		case trace.KindAgentCallComplete, trace.KindAgentCallError:
			if lastAgent != nil && lastAgent.start != nil && lastAgent.end == nil {
				end, err := decodeAgentEnd(ev)
				if err != nil {
					return nil, err
				}
				lastAgent.end = end
			}
		case trace.KindHarnessReturned:
			var p trace.HarnessReturned
			if err := trace.Decode(ev, &p); err != nil {
				return nil, err
			}
			idx := -1
			for j, c := range open {
				if c.ns == p.Namespace {
					idx = j
					break
				}
			}
			if idx < 0 {
				return nil, fmt.Errorf("trace: harness.returned for %q (turn %d, seq %d) without a harness.dispatched before it", p.Namespace, ev.Turn, ev.Seq)
			}
			c := open[idx]
			open = append(open[:idx], open[idx+1:]...)
			hc := &host.Call{Namespace: c.ns, Args: c.args, State: c.state, TurnState: c.phase, Turn: c.turn}
			res := &host.Result{Data: p.Data}
			if p.Error != "" {
				res.Err = plainError(p.Error)
			}
			ep := hostEpisode(c.ns, firstSegment(c.phase), hc, res, nil)
			if ep.Agent != nil {
				describeFromTrace(ep.Agent, c.start, c.end)
				if err := foldTranscript(ep.Agent, c.end, transcripts); err != nil {
					return nil, fmt.Errorf("trace: agent call of %q (turn %d): %w", c.ns, c.turn, err)
				}
			}
			ep.ID = cassette.UniqueID(ep.ID, func(id string) bool { return ids[id] })
			ids[ep.ID] = true
			eps = append(eps, ep)
			if lastAgent == c {
				lastAgent = nil
			}
		}
	}
	return New(appID, eps, append([]cassette.LoadOption{cassette.WithGetenv(func(string) string { return "" })}, opts...)...)
}

// foldTranscript reads the transcript the call's closing event points at
// into its agent block.
func foldTranscript(ab *cassette.AgentBlock, end *agentEnd, transcripts Transcripts) error {
	if end == nil || transcripts == nil {
		return nil
	}
	ref := end.ref()
	if ref == nil {
		return nil
	}
	t, err := transcripts(ref)
	if err != nil {
		return err
	}
	ab.Transcript = cassette.TranscriptOf(t)
	return nil
}

// ref is the closing event's transcript_ref.
func (e *agentEnd) ref() *trace.TranscriptRef {
	if e.failed != nil {
		return e.failed.TranscriptRef
	}
	return e.complete.TranscriptRef
}

// agentEnd is the closing event of an agent call: complete or error.
type agentEnd struct {
	complete *trace.AgentCallComplete
	failed   *trace.AgentCallError
}

func decodeAgentEnd(ev *trace.Event) (*agentEnd, error) {
	if ev.Kind == trace.KindAgentCallError {
		var p trace.AgentCallError
		if err := trace.Decode(ev, &p); err != nil {
			return nil, err
		}
		return &agentEnd{failed: &p}, nil
	}
	var p trace.AgentCallComplete
	if err := trace.Decode(ev, &p); err != nil {
		return nil, err
	}
	return &agentEnd{complete: &p}, nil
}

type plainError string

func (e plainError) Error() string { return string(e) }

// describeFromTrace fills an agent: block from the agent.call.* payloads.
func describeFromTrace(ab *cassette.AgentBlock, start *trace.AgentCallStart, end *agentEnd) {
	if start != nil {
		if start.Verb != "" {
			ab.Verb = start.Verb
		}
		ab.Agent, ab.Model, ab.Prompt = start.Agent, start.Model, start.Prompt
		if start.Input != nil {
			nv, err := cassette.NormalizeJSON(start.Input)
			if err == nil {
				ab.Input = nv
			}
		}
	}
	switch {
	case end == nil:
		return
	case end.failed != nil:
		ab.DurationMS = end.failed.DurationMS
		ab.Error = end.failed.Error
		return
	}
	c := end.complete
	ab.DurationMS = c.DurationMS
	ab.Error = ""
	if c.Meta != nil {
		cassette.FillFromMeta(ab, c.Meta)
	}
	if r := c.Response; r != nil {
		if m, ok := r.(map[string]any); ok {
			if sub, ok := m["submission"]; ok { // the plugin path: {submission, meta}
				r = sub
				if meta, ok := m["meta"].(map[string]any); ok && c.Meta == nil {
					cassette.FillFromMeta(ab, meta)
				}
			}
		}
		if s, ok := r.(string); ok {
			ab.Response = s
		} else if b, err := json.Marshal(r); err == nil {
			ab.Response = string(b)
		}
	}
}
