package usage

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromMeta(t *testing.T) {
	tests := []struct {
		name string
		meta map[string]any
		want Usage
	}{
		{"nil meta", nil, Usage{}},
		{"empty meta", map[string]any{}, Usage{}},
		{"claude shape", map[string]any{
			"usage":    map[string]any{"input_tokens": float64(640), "output_tokens": float64(58), "cache_read_input_tokens": float64(9)},
			"cost_usd": 0.0031, "total_cost_usd": 0.002,
		}, Usage{InputTokens: 640, OutputTokens: 58, HasTokens: true, CostUSD: 0.0031, HasCost: true}},
		{"local model shape", map[string]any{"prompt_tokens": 12, "completion_tokens": 3},
			Usage{InputTokens: 12, OutputTokens: 3, HasTokens: true}},
		{"usage wins over prompt/completion", map[string]any{
			"usage":         map[string]any{"input_tokens": 5},
			"prompt_tokens": 100, "completion_tokens": 200,
		}, Usage{InputTokens: 5, HasTokens: true}},
		{"usage without counts falls back", map[string]any{
			"usage":             map[string]any{"cache_read_input_tokens": 7},
			"completion_tokens": int64(4),
		}, Usage{OutputTokens: 4, HasTokens: true}},
		{"usage not a map", map[string]any{"usage": "lots"}, Usage{}},
		{"counts not numbers", map[string]any{"usage": map[string]any{"input_tokens": "5"}, "prompt_tokens": true}, Usage{}},
		{"zero counts are reported", map[string]any{"usage": map[string]any{"input_tokens": 0, "output_tokens": 0}},
			Usage{HasTokens: true}},
		{"json.Number from a trace reader", map[string]any{
			"usage":    map[string]any{"input_tokens": json.Number("640"), "output_tokens": json.Number("58.9")},
			"cost_usd": json.Number("0.0031"),
		}, Usage{InputTokens: 640, OutputTokens: 58, HasTokens: true, CostUSD: 0.0031, HasCost: true}},
		{"total_cost_usd when cost_usd is missing", map[string]any{"total_cost_usd": 0.5},
			Usage{CostUSD: 0.5, HasCost: true}},
		{"cost_usd not a number falls back to total", map[string]any{"cost_usd": "free", "total_cost_usd": 0.25},
			Usage{CostUSD: 0.25, HasCost: true}},
		{"zero cost is reported", map[string]any{"cost_usd": 0}, Usage{HasCost: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromMeta(tt.meta)); diff != "" {
				t.Errorf("FromMeta (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	if got := (Usage{InputTokens: 640, OutputTokens: 58}).Tokens(); got != 698 {
		t.Errorf("Tokens() = %d, want 698", got)
	}
}
