package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// CallID returns the call_id of an agent call: the first 16 lowercase hex
// characters of SHA-256 over "agent-call:" + appID + ":" + key.
//
// key is LiveCallKey(...) for a live call and CassetteCallKey(...) for a call
// answered from a cassette episode.
func CallID(appID, key string) string {
	h := sha256.New()
	h.Write([]byte("agent-call:"))
	h.Write([]byte(appID))
	h.Write([]byte(":"))
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8])
}

// LiveCallKey is the call_id key of a live agent call:
// "<turn>:<state_path>:<seq>", where seq is the seq of the call's
// agent.call.start line.
func LiveCallKey(turn int64, statePath string, seq int) string {
	return strconv.FormatInt(turn, 10) + ":" + statePath + ":" + strconv.Itoa(seq)
}

// CassetteCallKey is the call_id key of a call answered by a cassette
// episode: "<episode_id>:<match_idx>".
func CassetteCallKey(episodeID string, matchIdx int) string {
	return episodeID + ":" + strconv.Itoa(matchIdx)
}
