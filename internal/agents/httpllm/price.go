package httpllm

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Tokens are what one request (or a call's requests, summed) used. Input
// counts the input tokens billed at the full input price: without the
// ones read from or written to the prompt cache, which CacheRead and
// CacheWrite count.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Add sums two counts.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.Output + u.Output, t.CacheRead + u.CacheRead, t.CacheWrite + u.CacheWrite}
}

// Providers whose prices the built-in list knows.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// priced is one entry of the price list: a model-name prefix and its
// prices.
type priced struct {
	prefix string
	price  agent.Pricing
}

// prices are the providers' list prices in US dollars per million tokens
// (their pricing pages, December 2026); a declaration's pricing: takes
// their place, and a model none names has no cost. The longest prefix
// of the model's name wins.
var prices = map[string][]priced{
	ProviderAnthropic: {
		{"claude-opus-4", agent.Pricing{InputPerMTok: 15, OutputPerMTok: 75}},
		{"claude-opus-4-5", agent.Pricing{InputPerMTok: 5, OutputPerMTok: 25}},
		{"claude-opus-4-6", agent.Pricing{InputPerMTok: 5, OutputPerMTok: 25}},
		{"claude-opus-4-7", agent.Pricing{InputPerMTok: 5, OutputPerMTok: 25}},
		{"claude-opus-4-8", agent.Pricing{InputPerMTok: 5, OutputPerMTok: 25}},
		{"claude-opus-5", agent.Pricing{InputPerMTok: 5, OutputPerMTok: 25}},
		{"claude-sonnet-4", agent.Pricing{InputPerMTok: 3, OutputPerMTok: 15}},
		{"claude-3-7-sonnet", agent.Pricing{InputPerMTok: 3, OutputPerMTok: 15}},
		{"claude-3-5-sonnet", agent.Pricing{InputPerMTok: 3, OutputPerMTok: 15}},
		{"claude-haiku-4-5", agent.Pricing{InputPerMTok: 1, OutputPerMTok: 5}},
		{"claude-3-5-haiku", agent.Pricing{InputPerMTok: 0.8, OutputPerMTok: 4}},
		{"claude-3-haiku", agent.Pricing{InputPerMTok: 0.25, OutputPerMTok: 1.25}},
	},
	ProviderOpenAI: {
		{"gpt-5", agent.Pricing{InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125}},
		{"gpt-5-mini", agent.Pricing{InputPerMTok: 0.25, OutputPerMTok: 2, CacheReadPerMTok: 0.025}},
		{"gpt-5-nano", agent.Pricing{InputPerMTok: 0.05, OutputPerMTok: 0.4, CacheReadPerMTok: 0.005}},
		{"gpt-4.1", agent.Pricing{InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5}},
		{"gpt-4.1-mini", agent.Pricing{InputPerMTok: 0.4, OutputPerMTok: 1.6, CacheReadPerMTok: 0.1}},
		{"gpt-4.1-nano", agent.Pricing{InputPerMTok: 0.1, OutputPerMTok: 0.4, CacheReadPerMTok: 0.025}},
		{"gpt-4o", agent.Pricing{InputPerMTok: 2.5, OutputPerMTok: 10, CacheReadPerMTok: 1.25}},
		{"gpt-4o-mini", agent.Pricing{InputPerMTok: 0.15, OutputPerMTok: 0.6, CacheReadPerMTok: 0.075}},
		{"o3", agent.Pricing{InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5}},
		{"o3-mini", agent.Pricing{InputPerMTok: 1.1, OutputPerMTok: 4.4, CacheReadPerMTok: 0.55}},
		{"o4-mini", agent.Pricing{InputPerMTok: 1.1, OutputPerMTok: 4.4, CacheReadPerMTok: 0.275}},
	},
}

// PriceFor is the price of model at provider: override when given, else
// the built-in list's; ok is false when neither prices it.
func PriceFor(provider, model string, override *agent.Pricing) (agent.Pricing, bool) {
	if override != nil {
		return *override, true
	}
	best, found := agent.Pricing{}, -1
	for _, p := range prices[provider] {
		if strings.HasPrefix(model, p.prefix) && len(p.prefix) > found {
			best, found = p.price, len(p.prefix)
		}
	}
	return best, found >= 0
}

// Cost is what t costs at p, in dollars. A cache price of 0 is the input
// price at the usual rates: reads a tenth of it, writes a quarter more.
func Cost(p agent.Pricing, t Tokens) float64 {
	read, write := p.CacheReadPerMTok, p.CacheWritePerMTok
	if read == 0 {
		read = p.InputPerMTok / 10
	}
	if write == 0 {
		write = p.InputPerMTok * 1.25
	}
	usd := float64(t.Input)*p.InputPerMTok + float64(t.Output)*p.OutputPerMTok +
		float64(t.CacheRead)*read + float64(t.CacheWrite)*write
	return usd / 1e6
}
