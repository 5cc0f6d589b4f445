package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
)

// EpisodeID is the id of a recorded episode before de-duplication.
func EpisodeID(handler, state string) string { return "recorded_" + handler + "_" + state }

// UniqueID returns id, or id_2, id_3, ... when taken already.
func UniqueID(id string, taken func(string) bool) string {
	if !taken(id) {
		return id
	}
	for n := 2; ; n++ {
		if c := id + "_" + strconv.Itoa(n); !taken(c) {
			return c
		}
	}
}

// AgentEpisode records one agent exchange under alias: match on handler
// and phase; the answer lives in the agent: block (agent episodes store no
// data), so a replay hands the host the same raw submission and the host
// validates it again.
func AgentEpisode(ctx context.Context, alias, phase string, call *agent.Call, resp *agent.AskResponse, err error) *Episode {
	req := call.Request
	ab := &AgentBlock{Verb: req.Verb, Turn: int64(req.Turn), Prompt: req.Prompt, Model: call.Model}
	if call.Persona != nil {
		ab.Agent = call.Persona.Name
	}
	if resp != nil {
		FillFromMeta(ab, resp.Meta)
	}
	switch {
	case err != nil:
		ab.Error = askErrorText(ctx, err)
		if ae, ok := agent.AsAskError(err); ok {
			ab.Transcript = TranscriptOf(ae.Transcript)
		}
	case resp != nil:
		ab.Transcript = TranscriptOf(resp.Transcript)
		ab.Response = ResponseText(resp.Submission)
		if !bytes.Equal(submissionOf(ab.Response), resp.Submission) {
			ab.Submission = string(resp.Submission) // response alone would replay other bytes
		}
	}
	return &Episode{ID: EpisodeID(alias, req.StatePath),
		Match: map[string]any{"handler": alias, "phase": phase}, RequestHash: agentRequestHash(req), Agent: ab}
}

// askErrorText is the error as the host classifies it: an AskError as
// is; a plain error returned once the call's context ended is
// deadline_exceeded, any other plain error plugin_crash.
func askErrorText(ctx context.Context, err error) string {
	if ae, ok := agent.AsAskError(err); ok {
		return ae.Error()
	}
	kind := agent.KindPluginCrash
	if ctx.Err() != nil {
		kind = agent.KindDeadlineExceeded
	}
	return (&agent.AskError{Kind: kind, Detail: err.Error()}).Error()
}

// ResponseText is a submission as an agent: response: the text of a JSON
// string, the JSON itself otherwise.
func ResponseText(sub json.RawMessage) string {
	if len(sub) == 0 {
		return ""
	}
	var s string
	if sub[0] == '"' && json.Unmarshal(sub, &s) == nil {
		return s
	}
	return string(sub)
}

// FillFromMeta copies model, duration, token counts and cost from a
// transport's meta: a non-empty model and a positive duration_ms replace
// what the block has; tokens and cost are read by usage.FromMeta and set
// when the meta reports them.
func FillFromMeta(ab *AgentBlock, meta map[string]any) {
	if meta == nil {
		return
	}
	if m, ok := meta["model"].(string); ok && m != "" {
		ab.Model = m
	}
	if n, ok := number.Int(meta["duration_ms"]); ok && n > 0 {
		ab.DurationMS = n
	}
	u := usage.FromMeta(meta)
	if u.HasTokens {
		ab.PromptTokens, ab.ResponseTokens = u.InputTokens, u.OutputTokens
	}
	if u.HasCost {
		ab.CostUSD = u.CostUSD
	}
}
