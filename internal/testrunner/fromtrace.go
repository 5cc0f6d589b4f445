package testrunner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/trace"
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
// opts are passed to the cassette (WithSecrets masks what it writes).
func FromTrace(events []trace.Event, appID string, opts ...LoadOption) (*Cassette, error) {
	type call struct {
		ns    string
		args  map[string]any
		state string
		turn  int64
		start map[string]any
		end   map[string]any
		isErr bool
	}
	var open []*call // dispatched, not yet returned
	var lastAgent *call
	var eps []*Episode
	ids := map[string]bool{}
	for i := range events {
		ev := &events[i]
		p := ev.Payload
		switch ev.Kind {
		case trace.KindSessionStory:
			if id, ok := p["app_id"].(string); ok && id != "" {
				appID = id
			}
		case trace.KindHarnessDispatched:
			ns, _ := p["namespace"].(string)
			args, _ := p["args"].(map[string]any)
			c := &call{ns: ns, args: args, state: ev.StatePath, turn: ev.Turn}
			open = append(open, c)
			if strings.HasPrefix(ns, host.AgentNamespace) {
				lastAgent = c
			}
		case trace.KindAgentCallStart:
			if lastAgent != nil && lastAgent.start == nil {
				lastAgent.start = p
			}
		case trace.KindAgentCallComplete, trace.KindAgentCallError:
			if lastAgent != nil && lastAgent.start != nil && lastAgent.end == nil {
				lastAgent.end, lastAgent.isErr = p, ev.Kind == trace.KindAgentCallError
			}
		case trace.KindHarnessReturned:
			ns, _ := p["namespace"].(string)
			idx := -1
			for j, c := range open {
				if c.ns == ns {
					idx = j
					break
				}
			}
			if idx < 0 {
				return nil, fmt.Errorf("trace: harness.returned for %q (turn %d, seq %d) without a harness.dispatched before it", ns, ev.Turn, ev.Seq)
			}
			c := open[idx]
			open = append(open[:idx], open[idx+1:]...)
			hc := &host.Call{Namespace: c.ns, Args: c.args, State: c.state, Turn: c.turn}
			res := &host.Result{}
			if d, ok := p["data"].(map[string]any); ok {
				res.Data = d
			}
			if e, ok := p["error"].(string); ok && e != "" {
				res.Err = plainError(e)
			}
			ep := hostEpisode(c.ns, firstSegment(c.state), hc, res, nil)
			if ep.Agent != nil {
				describeFromTrace(ep.Agent, c.start, c.end, c.isErr)
			}
			ep.ID = uniqueID(ep.ID, func(id string) bool { return ids[id] })
			ids[ep.ID] = true
			eps = append(eps, ep)
			if lastAgent == c {
				lastAgent = nil
			}
		}
	}
	return NewCassette(appID, eps, append([]LoadOption{WithGetenv(func(string) string { return "" })}, opts...)...)
}

type plainError string

func (e plainError) Error() string { return string(e) }

// describeFromTrace fills an agent: block from the agent.call.* payloads.
func describeFromTrace(ab *AgentBlock, start, end map[string]any, isErr bool) {
	if start != nil {
		if v, ok := start["verb"].(string); ok && v != "" {
			ab.Verb = v
		}
		if v, ok := start["agent"].(string); ok {
			ab.Agent = v
		}
		if v, ok := start["model"].(string); ok {
			ab.Model = v
		}
		if v, ok := start["prompt"].(string); ok {
			ab.Prompt = v
		}
		if v, ok := start["input"]; ok {
			nv, err := normalizeJSON(v)
			if err == nil {
				ab.Input = nv
			}
		}
	}
	if end == nil {
		return
	}
	if n, ok := toInt(end["duration_ms"]); ok {
		ab.DurationMS = n
	}
	if isErr {
		if e, ok := end["error"].(string); ok {
			ab.Error = e
		}
		return
	}
	ab.Error = ""
	if meta, ok := end["meta"].(map[string]any); ok {
		fillFromMeta(ab, meta)
	}
	if r, ok := end["response"]; ok && r != nil {
		if m, ok := r.(map[string]any); ok {
			if sub, ok := m["submission"]; ok { // the plugin path: {submission, meta}
				r = sub
				if meta, ok := m["meta"].(map[string]any); ok && end["meta"] == nil {
					fillFromMeta(ab, meta)
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
