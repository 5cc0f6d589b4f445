package cluster

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// KindAPICall is the trace event of a session API call (an MCP tool
// call) that reached the session: the same kind, and the same payload, a
// local session's trace has for it (driver.KindAPICall).
const KindAPICall = "kitsoki.api.call"

// AuditUpdate writes the record of a call that takes no turn (continue,
// inspect, render) into the session's trace. A call that takes a turn
// carries its record in the intent update (IntentRequest.Audit), and a
// new session in its input (SessionInput.Audit).
const AuditUpdate = "audit"

// Audit names the caller of a session API call, for the session's trace.
type Audit struct {
	// Surface is the front end ("mcp"); Tool the call
	// (session_submit_kitsoki); Client the client's session id at that
	// surface ("" on stdio).
	Surface string `json:"surface"`
	Tool    string `json:"tool"`
	Client  string `json:"client,omitempty"`
}

// payload is the event's payload, as a local session writes it.
func (a *Audit) payload() map[string]any {
	p := map[string]any{"surface": a.Surface, "tool": a.Tool}
	if a.Client != "" {
		p["client"] = a.Client
	}
	return p
}

// audit writes a's record at the session's current turn and state. It
// runs between turns (its caller waits for ready), so it never lands
// inside a turn's events. Writing to the in-memory trace issues no
// command, so a history replays the same with or without it.
func (r *sessionRun) audit(a *Audit) {
	if a == nil || a.Tool == "" {
		return
	}
	_ = r.sink.Append(&trace.Event{Turn: r.sess.TurnNumber(), StatePath: r.sess.State(), Kind: KindAPICall, Payload: a.payload()})
}

// registerAudit sets the audit update's handler: it waits until the
// session has started and no turn runs, then writes the record.
func (r *sessionRun) registerAudit() error {
	err := workflow.SetUpdateHandlerWithOptions(r.ctx, AuditUpdate, func(uctx workflow.Context, a Audit) error {
		if err := workflow.Await(uctx, r.ready); err != nil {
			return err
		}
		r.audit(&a)
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(a Audit) error {
		if a.Tool == "" {
			return fmt.Errorf("an audit record names its tool")
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("update %s: %w", AuditUpdate, err)
	}
	return nil
}

// Audit writes the record of a call that takes no turn into the trace of
// the running session id, once no turn runs there; it returns when the
// record is written.
func (c *Client) Audit(ctx context.Context, id string, a Audit) error {
	for attempt := 1; ; attempt++ {
		h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: AuditUpdate,
			Args: []any{a}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err == nil {
			return nil
		}
		// A run that closed to continue as new refuses the update; the
		// session's next run takes it, as Intent does.
		_, notFound := errors.AsType[*serviceerror.NotFound](err)
		if notFound && attempt < maxContinuedRetries {
			if si, derr := c.Describe(ctx, id); derr == nil && si.Running() {
				continue
			}
		}
		return c.closedOr(ctx, id, err)
	}
}
