package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// AdHocCall is a call no invoke of the story asked for (the free-text
// router's decide): the worker cannot find it by position, so the
// workflow sends what the session built it from — the handler, the agent,
// the schema document and why kitsoki made the call.
type AdHocCall struct {
	Name       string          `json:"name"`
	Agent      string          `json:"agent,omitempty"`
	SchemaName string          `json:"schema_name,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Purpose    string          `json:"purpose"`
}

// adHocCall describes c for the worker; only calls with a purpose (made
// by kitsoki itself, not by an invoke) are sent this way.
func adHocCall(c *host.Call, refErr error) (*AdHocCall, error) {
	if c.Purpose == "" || c.Invoke == nil {
		if refErr != nil {
			return nil, refErr
		}
		return nil, fmt.Errorf("%s: a call no invoke asked for and with no purpose cannot run in a Temporal session", c.Namespace)
	}
	a := &AdHocCall{Name: c.Invoke.Name, Agent: c.Invoke.Agent, Purpose: c.Purpose}
	if c.Schema != nil {
		a.SchemaName, a.Schema = c.Schema.Path, c.Schema.Raw
	}
	return a, nil
}

// call rebuilds the invoke and the compiled schema on the worker.
func (a *AdHocCall) call() (*story.Invoke, *schema.Schema, error) {
	inv := &story.Invoke{Name: a.Name, Agent: a.Agent}
	if a.Schema == nil {
		return inv, nil, nil
	}
	sch, err := schema.CompileDocument(a.SchemaName, a.Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%s call: %w", a.Purpose, err)
	}
	return inv, sch, nil
}

// takeTurn takes the update's turn: free text (Input with no Intent) is
// routed as a local run routes it (Session.Say: the deterministic tiers,
// then the router agent's call as an activity); anything else is a typed
// intent.
func takeTurn(sess *orchestrator.Session, req IntentRequest) (*orchestrator.Outcome, error) {
	if req.Back {
		return sess.Back(context.Background())
	}
	if req.Intent == "" && req.Input != "" {
		return sess.Say(context.Background(), req.Input)
	}
	return sess.Turn(context.Background(), req.Intent, req.Slots.Map(), req.Input)
}

// freeText reports whether the update's request is free text, which only
// its turn can check (routing decides the intent).
func freeText(req IntentRequest) bool { return req.Intent == "" && req.Input != "" }

// routing is the session's routing configuration from its input.
func routing(in SessionInput) orchestrator.RoutingConfig {
	if in.Routing == nil {
		return orchestrator.RoutingConfig{}
	}
	return *in.Routing
}
