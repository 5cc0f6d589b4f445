// Package echo is the scripted agent behind kitsoki's example plugins. The
// Go subprocess plugin (echo-go), the Go MCP server (echo-mcp) and the tests
// that compare transports all answer with it, and the Python plugin
// (echo-py) reimplements it, so one story behaves the same whichever wire
// it is routed through.
//
// It answers from the call's with: arguments, which makes it useful for
// demos and tests without a model:
//
//	answer:      the submission. A string holding JSON is that JSON; any
//	             other string is submitted as a JSON string; other values
//	             are submitted as they are.
//	sleep_ms:    wait this long before answering (the call's context
//	             still cuts the wait short).
//	fail:        answer with this error message instead.
//	sub_events:  a list of events returned as the response's sub_events.
//
// Without answer it submits {"verb", "prompt", "call_id"} echoed back.
//
// The agent also serves one agent tool, echo (tool.go), which stories
// declare under agent_tools: to hand it to their agents.
package echo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kitsoki/kitsoki/plugin"
)

// Agent is the echo agent. Its zero value is ready to use.
type Agent struct{}

// Ask answers one call as the package comment says.
func (Agent) Ask(ctx context.Context, req *plugin.AskRequest) (*plugin.AskResponse, error) {
	if ms, ok := number(req.With["sleep_ms"]); ok && ms > 0 {
		t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if msg, ok := req.With["fail"].(string); ok && msg != "" {
		return nil, errors.New(msg)
	}
	sub, err := submission(req)
	if err != nil {
		return nil, err
	}
	resp := &plugin.AskResponse{
		Submission: sub,
		Meta:       map[string]any{"agent": "echo", "prompt_bytes": len(req.Prompt)},
	}
	if raw, ok := req.With["sub_events"]; ok && raw != nil {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, fmt.Errorf("with.sub_events: %w", err)
		}
		if err := json.Unmarshal(b, &resp.SubEvents); err != nil {
			return nil, fmt.Errorf("with.sub_events must be a list of events: %w", err)
		}
	}
	return resp, nil
}

// submission builds the answer in Go's canonical JSON encoding (compact,
// HTML-escaped), so its bytes survive any transport unchanged.
func submission(req *plugin.AskRequest) (json.RawMessage, error) {
	answer, ok := req.With["answer"]
	if !ok {
		return json.Marshal(map[string]any{"verb": req.Verb, "prompt": req.Prompt, "call_id": req.CallID})
	}
	if s, isString := answer.(string); isString && json.Valid([]byte(s)) {
		return json.Marshal(json.RawMessage(s))
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return nil, fmt.Errorf("with.answer: %w", err)
	}
	return b, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
