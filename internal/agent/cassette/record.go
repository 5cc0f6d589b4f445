package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/kitsoki/kitsoki/internal/agent"
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
	case resp != nil:
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
// transport's meta (claude: usage.input_tokens/output_tokens and cost_usd;
// local models: prompt_tokens/completion_tokens).
func FillFromMeta(ab *AgentBlock, meta map[string]any) {
	if meta == nil {
		return
	}
	if m, ok := meta["model"].(string); ok && m != "" {
		ab.Model = m
	}
	if n, ok := toInt(meta["duration_ms"]); ok {
		ab.DurationMS = n
	}
	if u, ok := meta["usage"].(map[string]any); ok {
		if n, ok := toInt(u["input_tokens"]); ok {
			ab.PromptTokens = n
		}
		if n, ok := toInt(u["output_tokens"]); ok {
			ab.ResponseTokens = n
		}
	}
	if n, ok := toInt(meta["prompt_tokens"]); ok && ab.PromptTokens == 0 {
		ab.PromptTokens = n
	}
	if n, ok := toInt(meta["completion_tokens"]); ok && ab.ResponseTokens == 0 {
		ab.ResponseTokens = n
	}
	if f, ok := toFloat(meta["cost_usd"]); ok {
		ab.CostUSD = f
	}
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
