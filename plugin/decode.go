package plugin

import "github.com/kitsoki/kitsoki/internal/base/jsonwire"

// parseRequestFast decodes the usual request line in one pass
// (jsonwire's Fields): its keys exactly jsonrpc, id (a number or a
// string), method and params, each once, with params an AskRequest whose
// keys are spelled as its tags, each once, and no null where a field is
// but with and world.vars (a nil map, as encoding/json leaves it).
// The result is what encoding/json makes of the same line. Anything else
// (other keys or spellings, which encoding/json may match without regard
// to case, a repeated key, a null, invalid JSON, a value out of range) is
// false, and parseRequest decodes the line with encoding/json.
func parseRequestFast(line []byte) (*request, bool) {
	r := jsonwire.NewReader(string(line), nil, nil)
	req := &request{}
	var version string
	ok := r.Fields([]jsonwire.Field{
		{Key: "jsonrpc", To: &version},
		{Key: "id", To: func() bool {
			if c := r.Next(); c != '"' && c != '-' && (c < '0' || c > '9') {
				return false
			}
			return r.Into(&req.ID)
		}},
		{Key: "method", To: &req.Method},
		{Key: "params", To: func() bool {
			req.Params = &AskRequest{}
			return askRequestFast(&r, req.Params)
		}},
	})
	if !ok || !r.End() {
		return nil, false
	}
	return req, true
}

// askRequestFast reads an AskRequest object into p for parseRequestFast;
// world is {} or {"vars": ...}.
func askRequestFast(r *jsonwire.Reader, p *AskRequest) bool {
	return r.Fields([]jsonwire.Field{
		{Key: "session_id", To: &p.SessionID},
		{Key: "turn", To: &p.Turn},
		{Key: "state_path", To: &p.StatePath},
		{Key: "verb", To: &p.Verb},
		{Key: "prompt", To: &p.Prompt},
		{Key: "schema", To: &p.Schema},
		{Key: "with", To: &p.With},
		{Key: "world", To: func() bool {
			return r.Fields([]jsonwire.Field{{Key: "vars", To: &p.World.Vars}})
		}},
		{Key: "deadline", To: &p.Deadline},
		{Key: "call_id", To: &p.CallID},
	})
}
