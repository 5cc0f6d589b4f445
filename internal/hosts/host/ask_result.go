package host

import (
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/plugin"
)

// result is the Result of an agent call that went through the chain, in
// one of two shapes: the built-in claude path's bind keys (builtinData)
// or a plugin's (submission, submitted, meta, ok, exit_code). A failed
// call binds ok=false, exit_code=1, the error text and the response's meta
// when there was one, and carries the call_id its failure is traced under.
func (c *askCall) result(a answer) *Result {
	r := c.resultData(a)
	r.Transcript = transcriptOf(&a)
	return r
}

func (c *askCall) resultData(a answer) *Result {
	var meta map[string]any
	if a.resp != nil {
		meta = a.resp.Meta
	}
	if a.err != nil {
		data := map[string]any{"ok": false, "exit_code": 1, "error": a.err.Error()}
		if meta != nil {
			data["meta"] = meta
		}
		return &Result{Data: data, Err: a.err, CallID: c.req.CallID}
	}
	if c.alias == "" {
		return &Result{Data: builtinData(c.verb, a.submission, meta)}
	}
	return &Result{Data: map[string]any{
		"submission": a.submission, "submitted": a.submission, "meta": metaOrNil(meta), "ok": true, "exit_code": 0,
	}}
}

// builtinData maps a built-in (claude path) answer to the bind keys of
// story-format.md §9: decide → submitted, rationale, exit_code, ok,
// claude_session_id; the other verbs → stdout, exit_code, ok, submitted.
func builtinData(verb string, submission any, meta map[string]any) map[string]any {
	exit := 0
	if n, ok := number.Int(meta["exit_code"]); ok {
		exit = int(n)
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

// metaOrNil keeps a nil meta a nil interface (null in binds and traces).
func metaOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
