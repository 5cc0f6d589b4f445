// Package usage reads what an agent answer's meta says the call used:
// tokens and cost. It is the one reading of the meta shapes transports
// report (trace-format.md, wire-protocols.md), shared by everything that
// counts them: eval runs and their cassettes, cassette recording, the
// OpenTelemetry export, the trace views and the session's cost keys.
package usage

import "github.com/kitsoki/kitsoki/internal/base/number"

// Usage is one answer's token counts and cost, each with whether the meta
// gave it (a transport that reports nothing is not a zero).
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// HasTokens is set when either count was reported.
	HasTokens bool
	CostUSD   float64
	// HasCost is set when a cost was reported (0 included).
	HasCost bool
}

// Tokens is the sum of the input and output counts.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// FromMeta reads a meta in the shapes transports give:
//
//   - tokens: usage.input_tokens / usage.output_tokens (the claude CLI, a
//     replayed cassette) when either is there, else prompt_tokens /
//     completion_tokens (local models, OpenAI-style); a count missing from
//     the pair found is 0;
//   - cost: cost_usd, else total_cost_usd (the claude CLI's envelope).
//
// Numbers are read with internal/base/number (int, int64, float64,
// json.Number; a fractional token count is truncated). A nil meta, or one
// with none of these keys, is the zero Usage.
func FromMeta(meta map[string]any) Usage {
	var u Usage
	if meta == nil {
		return u
	}
	if m, ok := meta["usage"].(map[string]any); ok {
		in, okIn := number.Int(m["input_tokens"])
		out, okOut := number.Int(m["output_tokens"])
		if okIn || okOut {
			u.InputTokens, u.OutputTokens, u.HasTokens = in, out, true
		}
	}
	if !u.HasTokens {
		in, okIn := number.Int(meta["prompt_tokens"])
		out, okOut := number.Int(meta["completion_tokens"])
		if okIn || okOut {
			u.InputTokens, u.OutputTokens, u.HasTokens = in, out, true
		}
	}
	if f, ok := number.Float(meta["cost_usd"]); ok {
		u.CostUSD, u.HasCost = f, true
	} else if f, ok := number.Float(meta["total_cost_usd"]); ok {
		u.CostUSD, u.HasCost = f, true
	}
	return u
}
