package cassette

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// A request hash tells a replay whether an episode was recorded for the
// request it now answers. It is the first 16 hex characters of SHA-256
// over a canonical JSON document (keys sorted, no spaces):
//
//   - agent exchanges (the agent role): {"prompt", "schema", "verb",
//     "with"}: the rendered prompt, the call's JSON Schema (re-encoded, so
//     layout and key order do not count), the verb, and the rendered with:
//     arguments;
//   - host calls (the host-handler role, built-in agent path included):
//     {"args", "invoke"}: the rendered with: arguments and the invoke name.
//
// Not hashed, because they change without the request changing: the
// session id, turn, state path (the phase is matched instead), call id,
// deadline and world snapshot, and the persona and model (recorded in the
// agent: block).
const requestHashLen = 16

// agentRequestHash is the request hash of an agent exchange.
func agentRequestHash(req *agent.AskRequest) string {
	var sch any
	if len(req.Schema) > 0 {
		if err := json.Unmarshal(req.Schema, &sch); err != nil {
			sch = string(req.Schema)
		}
	}
	return requestHash(map[string]any{"verb": req.Verb, "prompt": req.Prompt, "schema": sch, "with": req.With})
}

// HostRequestHash is the request hash of a host call: its invoke name and
// rendered with: arguments.
func HostRequestHash(invoke string, args map[string]any) string {
	return requestHash(map[string]any{"invoke": invoke, "args": args})
}

func requestHash(doc map[string]any) string {
	b, err := json.Marshal(doc)
	if err != nil { // a value JSON cannot encode: hash its Go rendering
		b = []byte(fmt.Sprintf("%#v", doc))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:requestHashLen]
}

// IsRequestHash reports whether s has the form of a request hash.
func IsRequestHash(s string) bool {
	if len(s) != requestHashLen {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
