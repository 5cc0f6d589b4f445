package subprocess

import (
	"encoding/json"

	"github.com/kitsoki/kitsoki/internal/jsonwire"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// askReplyFast decodes the usual agent.ask response line in one pass
// (internal/jsonwire): keys exactly jsonrpc, id (a number), result, each
// once, the result an object of submission (not null) and meta (an
// object), each at most once. It returns the id's text and the response,
// which is what encoding/json makes of the same line. Anything else
// (sub_events, a transcript, an error, other keys or spellings, a
// repeated key, a null, invalid JSON) is false, and dispatchAsk decodes
// the line with encoding/json.
func askReplyFast(line []byte) (id string, resp *plugin.AskResponse, ok bool) {
	r := jsonwire.NewReader(string(line))
	var seen uint8
	ok = r.Members(func(key string) bool {
		var bit uint8
		var ok bool
		switch key {
		case "jsonrpc":
			bit = 1
			_, ok = r.String()
		case "id":
			bit = 2
			if c := r.Next(); c >= '0' && c <= '9' {
				id, ok = r.Raw()
			}
		case "result":
			bit = 4
			resp, ok = askResponseFast(&r)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
	if !ok || !r.End() || seen&6 != 6 {
		return "", nil, false
	}
	return id, resp, true
}

func askResponseFast(r *jsonwire.Reader) (*plugin.AskResponse, bool) {
	resp := &plugin.AskResponse{}
	var seen uint8
	ok := r.Members(func(key string) bool {
		var bit uint8
		var ok bool
		switch key {
		case "submission":
			bit = 1
			if r.Next() != 'n' {
				var raw string
				raw, ok = r.Raw()
				resp.Submission = json.RawMessage(raw)
			}
		case "meta":
			bit = 2
			resp.Meta, ok = r.Object()
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
	return resp, ok
}
