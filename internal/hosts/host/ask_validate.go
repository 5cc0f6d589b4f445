package host

import (
	"context"
	"encoding/json"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
)

// stepValidate turns the submission of an answer that got this far into
// the value binds read: validated against the call's schema, or, without
// one, parsed as JSON and else kept as text. A submission the schema
// rejects is schema_invalid; the response stays on the answer (its meta
// is bound).
func stepValidate(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	a, err := next(ctx, c)
	if err != nil || a.err != nil {
		return a, err
	}
	a.submission, a.err = validate(c.schema, a.resp.Submission)
	return a, nil
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
