package plugin

import (
	"encoding/json"

	"github.com/kitsoki/kitsoki/internal/jsonwire"
)

// parseRequestFast decodes the usual request line in one pass
// (internal/jsonwire): its keys exactly jsonrpc, id (a number or a
// string), method and params, each once, with params an AskRequest whose
// keys are spelled as its tags, each once, and no null where a field is
// but with and world.vars (a nil map, as encoding/json leaves it).
// The result is what encoding/json makes of the same line. Anything else
// (other keys or spellings, which encoding/json may match without regard
// to case, a repeated key, a null, invalid JSON, a value out of range) is
// false, and parseRequest decodes the line with encoding/json.
func parseRequestFast(line []byte) (*request, bool) {
	r := jsonwire.NewReader(string(line))
	req := &request{}
	var seen uint8
	ok := r.Members(func(key string) bool {
		var bit uint8
		var ok bool
		switch key {
		case "jsonrpc":
			bit = 1
			_, ok = r.String()
		case "id":
			bit = 2
			if c := r.Next(); c == '"' || c == '-' || (c >= '0' && c <= '9') {
				var raw string
				raw, ok = r.Raw()
				req.ID = json.RawMessage(raw)
			}
		case "method":
			bit = 4
			req.Method, ok = r.String()
		case "params":
			bit = 8
			req.Params, ok = askRequestFast(&r)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
	if !ok || !r.End() {
		return nil, false
	}
	return req, true
}

// askRequestFast reads an AskRequest object for parseRequestFast.
func askRequestFast(r *jsonwire.Reader) (*AskRequest, bool) {
	p := &AskRequest{}
	var seen uint16
	ok := r.Members(func(key string) bool {
		var bit uint16
		var ok bool
		switch key {
		case "session_id":
			bit = 1 << 0
			p.SessionID, ok = r.String()
		case "turn":
			bit = 1 << 1
			p.Turn, ok = r.Int()
		case "state_path":
			bit = 1 << 2
			p.StatePath, ok = r.String()
		case "verb":
			bit = 1 << 3
			p.Verb, ok = r.String()
		case "prompt":
			bit = 1 << 4
			p.Prompt, ok = r.String()
		case "schema":
			bit = 1 << 5
			if r.Next() != 'n' {
				var raw string
				raw, ok = r.Raw()
				p.Schema = json.RawMessage(raw)
			}
		case "with":
			bit = 1 << 6
			p.With, ok = objectOrNull(r)
		case "world":
			bit = 1 << 7
			ok = worldFast(r, &p.World)
		case "deadline":
			bit = 1 << 8
			p.Deadline, ok = r.String()
		case "call_id":
			bit = 1 << 9
			p.CallID, ok = r.String()
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
	return p, ok
}

// worldFast reads a World object: {} or {"vars": {...}}.
func worldFast(r *jsonwire.Reader, w *World) bool {
	seen := false
	return r.Members(func(key string) bool {
		if key != "vars" || seen {
			return false
		}
		seen = true
		var ok bool
		w.Vars, ok = objectOrNull(r)
		return ok
	})
}

// objectOrNull reads a map field's value: an object, or null, which
// leaves the map nil as encoding/json does.
func objectOrNull(r *jsonwire.Reader) (map[string]any, bool) {
	if r.Null() {
		return nil, true
	}
	return r.Object()
}
