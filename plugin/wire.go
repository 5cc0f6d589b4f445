// Package plugin is the public SDK for kitsoki agent plugins.
//
// It defines the wire types every transport speaks (AskRequest, AskResponse,
// Event) exactly once: kitsoki's own internal packages use these types, so a
// plugin author compiles against the same definitions the host decodes.
package plugin

import "encoding/json"

// AskRequest is what kitsoki sends to an agent plugin for one agent call.
// The JSON is identical on every transport.
type AskRequest struct {
	SessionID string          `json:"session_id"`
	Turn      int             `json:"turn"`
	StatePath string          `json:"state_path"`
	Verb      string          `json:"verb"`
	Prompt    string          `json:"prompt"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	With      map[string]any  `json:"with,omitempty"`
	World     World           `json:"world"`
	Deadline  string          `json:"deadline"`
	CallID    string          `json:"call_id"`
}

// World is the read-only world snapshot sent with a request. The wrapper
// object ({"vars": {...}}) is part of the wire format.
type World struct {
	Vars map[string]any `json:"vars"`
}

// AskResponse is what a plugin returns. Submission is validated by kitsoki
// against the call's schema; Meta is copied to the trace untouched.
type AskResponse struct {
	Submission json.RawMessage `json:"submission,omitempty"`
	Meta       map[string]any  `json:"meta,omitempty"`
	SubEvents  []Event         `json:"sub_events,omitempty"`
	Transcript *Transcript     `json:"transcript,omitempty"`
}

// Transcript is an optional record of the call's agent actions: the
// plugin's (or transport's) own event stream, Format naming it
// ("claude-stream-json"), each event one line of JSON, and Timings the
// millisecond offset of each event's capture (at most one per event, in
// order). kitsoki writes it beside the trace, as transcripts/<call_id>.jsonl
// and .timings, and points agent.call.complete at it (transcript_ref).
type Transcript struct {
	Format  string            `json:"format"`
	Events  []json.RawMessage `json:"events"`
	Timings []int64           `json:"timings,omitempty"`
}

// Event is one trace event. Plugins return them as sub-events; kitsoki's
// trace writer and reader use the same shape. Field order is the on-disk
// key order.
type Event struct {
	Turn       int64          `json:"turn"`
	Seq        int            `json:"seq"`
	TS         string         `json:"ts"`
	Kind       string         `json:"kind"`
	StatePath  string         `json:"state_path,omitempty"`
	ParentTurn int64          `json:"parent_turn,omitempty"`
	CallID     string         `json:"call_id,omitempty"`
	EpisodeID  string         `json:"episode_id,omitempty"`
	MatchIdx   int            `json:"match_idx,omitempty"`
	Payload    map[string]any `json:"payload"`
}

// Verbs an agent call can carry.
const (
	VerbAsk      = "ask"
	VerbDecide   = "decide"
	VerbExtract  = "extract"
	VerbTask     = "task"
	VerbConverse = "converse"
)
