package host

import (
	"context"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// stepRecord writes the sub-events of an answer into the trace, under the
// call's turn, state and call_id, once all of them keep the sub-event
// contract (checkSubEvents); a breach fails the call and writes none. A
// sub-event the trace cannot take fails the call as a transport_error.
func (h *Host) stepRecord(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	a, err := next(ctx, c)
	if err != nil || a.err != nil {
		return a, err
	}
	ns := c.alias
	if ns == "" {
		ns = agent.DefaultAlias
	}
	if a.err = checkSubEvents(a.resp.SubEvents, ns, c.req.CallID, h.mask); a.err != nil {
		return a, nil
	}
	for i := range a.resp.SubEvents {
		ev := a.resp.SubEvents[i]
		ev.Turn, ev.StatePath, ev.CallID, ev.TS, ev.Seq = c.call.Turn, c.call.State, c.req.CallID, "", 0
		ev.ParentTurn, ev.EpisodeID, ev.MatchIdx = 0, "", 0
		if err := c.call.SinkOr(h.sink).Append(&ev); err != nil {
			a.err = agent.Errorf(agent.KindTransportError, "sub_event[%d]: %v", i, &TraceError{err})
			return a, nil
		}
	}
	return a, nil
}

// checkSubEvents enforces the sub-event contract before any of them lands.
// Event kinds are never masked (masking must not change what an event
// is), so a kind that holds one of the story's secrets cannot be written:
// it breaks the namespace contract like a kind outside the namespace.
func checkSubEvents(evs []plugin.Event, alias, callID string, mask *secret.Masker) *agent.AskError {
	for i := range evs {
		if mask.Key(evs[i].Kind) != evs[i].Kind {
			return &agent.AskError{Kind: agent.KindSubEventNamespaceViolation,
				Detail: fmt.Sprintf("sub_event[%d]: Kind holds a secret value; event kinds are never masked, so it cannot be written", i)}
		}
		if k := evs[i].Kind; len(k) <= len(alias) || k[:len(alias)] != alias || k[len(alias)] != '.' {
			return &agent.AskError{Kind: agent.KindSubEventNamespaceViolation,
				Detail: fmt.Sprintf("sub_event[%d]: Kind %q does not start with required namespace prefix %q", i, k, alias+".")}
		}
		if evs[i].CallID != callID {
			return &agent.AskError{Kind: agent.KindSubEventCallIDMismatch,
				Detail: fmt.Sprintf("sub_event[%d]: CallID %q does not match parent call_id %q", i, evs[i].CallID, callID)}
		}
	}
	return nil
}
