package claudecli

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/schema"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// BindData maps a built-in route answer (NewBuiltin) to the bind data of
// story-format.md §9's claude path:
//
//	decide: submitted, rationale (meta.result), exit_code, ok, claude_session_id
//	ask (and extract, task, converse): stdout (meta.result), exit_code, ok,
//	    submitted (only when a submission was captured), claude_session_id
//
// The submission is decoded the way every submission is (schema.Decode).
func BindData(verb string, resp *agent.AskResponse) (map[string]any, error) {
	if resp == nil {
		return nil, fmt.Errorf("claude CLI: no response to bind")
	}
	meta := resp.Meta
	data := map[string]any{
		"exit_code":         meta["exit_code"],
		"ok":                true,
		"claude_session_id": meta["session_id"],
	}
	if data["exit_code"] == nil {
		data["exit_code"] = 0
	}
	var submitted any
	if len(resp.Submission) > 0 {
		v, err := schema.Decode(resp.Submission)
		if err != nil {
			return nil, agent.Errorf(agent.KindSchemaInvalid, "submission is not valid JSON: %w", err)
		}
		submitted = v
	}
	if verb == plugin.VerbDecide {
		data["submitted"] = submitted
		data["rationale"] = meta["result"]
		return data, nil
	}
	data["stdout"] = meta["result"]
	if submitted != nil {
		data["submitted"] = submitted
	}
	return data, nil
}
