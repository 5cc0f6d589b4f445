package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/schema"
	"github.com/kitsoki/kitsoki/internal/secret"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// This file is the answer side of an agent call: asking under the hard
// deadline, the sub-event contract, validation, the local-model fallback,
// and the bind data of the built-in path.

// askOnce asks one agent under the hard deadline, then checks sub-events
// and validates the submission. Sub-events that pass land in the trace.
func (h *Host) askOnce(ctx context.Context, alias string, a agent.Agent, ac *agent.Call, p *prepared, call *Call) (*agent.AskResponse, any, *agent.AskError) {
	resp, err := h.askWithDeadline(ctx, a, ac, p)
	if err != nil {
		return nil, nil, err
	}
	ns := alias
	if ns == "" {
		ns = agent.DefaultAlias
	}
	if err := checkSubEvents(resp.SubEvents, ns, p.req.CallID, h.mask); err != nil {
		return resp, nil, err
	}
	for i := range resp.SubEvents {
		ev := resp.SubEvents[i]
		ev.Turn, ev.StatePath, ev.CallID, ev.TS, ev.Seq = call.Turn, call.State, p.req.CallID, "", 0
		ev.ParentTurn, ev.EpisodeID, ev.MatchIdx = 0, "", 0
		if err := h.sink.Append(&ev); err != nil {
			return resp, nil, agent.Errorf(agent.KindTransportError, "sub_event[%d]: %v", i, &TraceError{err})
		}
	}
	sub, verr := validate(p.schema, resp.Submission)
	if verr != nil {
		return resp, nil, verr
	}
	return resp, sub, nil
}

// askWithDeadline runs Ask under the call's hard deadline. An agent that
// overruns it is abandoned: its late answer is discarded when it arrives.
func (h *Host) askWithDeadline(ctx context.Context, a agent.Agent, ac *agent.Call, p *prepared) (*agent.AskResponse, *agent.AskError) {
	cctx, cancel := clock.WithTimeout(ctx, h.clock, p.timeout)
	defer cancel()
	type answer struct {
		resp *agent.AskResponse
		err  error
	}
	ch := make(chan answer, 1)
	h.calls.do(func() {
		r, err := a.Ask(cctx, ac)
		ch <- answer{r, err}
	})
	var ans answer
	select {
	case ans = <-ch:
		if ans.err == nil && cctx.Err() != nil { // an answer that came with the deadline is late
			return nil, deadlineError(ctx, p.timeout)
		}
	case <-cctx.Done():
		return nil, deadlineError(ctx, p.timeout)
	}
	if ans.err != nil {
		if ae, ok := agent.AsAskError(ans.err); ok {
			return nil, ae
		}
		if cctx.Err() != nil {
			return nil, deadlineError(ctx, p.timeout)
		}
		return nil, &agent.AskError{Kind: agent.KindPluginCrash, Detail: ans.err.Error(), Err: ans.err}
	}
	if ans.resp == nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "agent returned no response and no error")
	}
	return ans.resp, nil
}

func deadlineError(parent context.Context, timeout time.Duration) *agent.AskError {
	if err := parent.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return agent.Errorf(agent.KindDeadlineExceeded, "call cancelled: %w", err)
	}
	return agent.Errorf(agent.KindDeadlineExceeded, "no answer within the hard deadline of %s; a late answer is discarded", timeout)
}

// fallback retries a schema-invalid answer once on agent.claude, with ac,
// the call value built for that agent.
func (h *Host) fallback(ctx context.Context, ac *agent.Call, p *prepared, call *Call) (*agent.AskResponse, any, *agent.AskError) {
	fb, err := h.registry.Get(agent.DefaultAlias)
	if err != nil {
		return nil, nil, agent.Errorf(agent.KindTransportError, "fallback to %s: %v", agent.DefaultAlias, err)
	}
	return h.askOnce(ctx, agent.DefaultAlias, fb, ac, p, call)
}

// checkSubEvents enforces the sub-event contract before any of them lands.
// Event kinds are never masked (masking must not change what an event
// is), so a kind that holds one of the story's secrets cannot be written:
// it breaks the namespace contract like a kind outside the namespace.
func checkSubEvents(evs []plugin.Event, alias, callID string, mask *secret.Masker) *agent.AskError {
	prefix := alias + "."
	for i := range evs {
		if mask.Key(evs[i].Kind) != evs[i].Kind {
			return &agent.AskError{Kind: agent.KindSubEventNamespaceViolation,
				Detail: fmt.Sprintf("sub_event[%d]: Kind holds a secret value; event kinds are never masked, so it cannot be written", i)}
		}
		if len(evs[i].Kind) < len(prefix) || evs[i].Kind[:len(prefix)] != prefix {
			return &agent.AskError{Kind: agent.KindSubEventNamespaceViolation,
				Detail: fmt.Sprintf("sub_event[%d]: Kind %q does not start with required namespace prefix %q", i, evs[i].Kind, prefix)}
		}
		if evs[i].CallID != callID {
			return &agent.AskError{Kind: agent.KindSubEventCallIDMismatch,
				Detail: fmt.Sprintf("sub_event[%d]: CallID %q does not match parent call_id %q", i, evs[i].CallID, callID)}
		}
	}
	return nil
}

// validate parses and validates a submission. Without a schema a JSON
// submission is parsed and anything else is kept as a string.
func validate(s *schema.Schema, raw json.RawMessage) (any, *agent.AskError) {
	if s == nil {
		if len(raw) == 0 {
			return nil, nil
		}
		v, err := schema.Decode(raw)
		if err != nil {
			return string(raw), nil
		}
		return v, nil
	}
	if len(raw) == 0 {
		return nil, &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: "submission is not valid JSON: empty submission"}
	}
	v, err := s.ValidateJSON(raw)
	if err != nil {
		return nil, &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: err.Error(), Err: err}
	}
	return v, nil
}

// builtinData maps a built-in (claude path) answer to the bind keys of
// story-format.md §9: decide → submitted, rationale, exit_code, ok,
// claude_session_id; the other verbs → stdout, exit_code, ok, submitted.
func builtinData(verb string, submission any, meta map[string]any) map[string]any {
	exit := 0
	if v, ok := meta["exit_code"]; ok {
		switch n := v.(type) {
		case int:
			exit = n
		case int64:
			exit = int(n)
		case float64:
			exit = int(n)
		}
	}
	d := map[string]any{"submitted": submission, "exit_code": exit, "ok": exit == 0, "meta": metaOrNil(meta)}
	if verb == plugin.VerbDecide {
		d["rationale"] = meta["result"]
		d["claude_session_id"] = meta["session_id"]
	} else {
		d["stdout"] = meta["result"]
	}
	return d
}
