package subprocess

import (
	"github.com/kitsoki/kitsoki/internal/base/jsonwire"
	"github.com/kitsoki/kitsoki/plugin"
)

// askReplyFast decodes the usual agent.ask response line in one pass
// (jsonwire's Fields): keys exactly jsonrpc, id (a number), result, each
// once, the result an object of submission (not null) and meta (an
// object), each at most once. It returns the id's text and the response,
// which is what encoding/json makes of the same line. Anything else
// (sub_events, a transcript, an error, other keys or spellings, a
// repeated key, a null, invalid JSON) is false, and dispatchAsk decodes
// the line with encoding/json.
func askReplyFast(line []byte) (id string, resp *plugin.AskResponse, ok bool) {
	r := jsonwire.NewReader(string(line), nil, nil)
	resp = &plugin.AskResponse{}
	var version string
	ok = r.Fields([]jsonwire.Field{
		{Key: "jsonrpc", To: &version},
		{Key: "id", Required: true, To: func() bool {
			if c := r.Next(); c < '0' || c > '9' {
				return false
			}
			var ok bool
			id, ok = r.Raw()
			return ok
		}},
		{Key: "result", Required: true, To: func() bool {
			return r.Fields([]jsonwire.Field{
				{Key: "submission", To: &resp.Submission},
				{Key: "meta", To: func() bool {
					var ok bool
					resp.Meta, ok = r.Object()
					return ok
				}},
			})
		}},
	})
	if !ok || !r.End() {
		return "", nil, false
	}
	return id, resp, true
}
