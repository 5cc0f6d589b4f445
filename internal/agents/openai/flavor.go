package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	schemapkg "github.com/kitsoki/kitsoki/internal/base/schema"
)

// Flavor is how a transport that runs its calls through this agent
// (builtin.local_llm, against its llama-server or one someone else runs)
// differs from builtin.openai: its name in messages, no default key or
// model, its retries, and when the answer is constrained. Config.Flavor
// nil is builtin.openai itself.
type Flavor struct {
	// API names the agent in failures ("local_llm agent"); Server the
	// server in connection failures ("local model server").
	API, Server string
	// Provider is meta.provider.
	Provider string
	// Retries is the default of retries: (0: none).
	Retries int
	// Constraint says when response_format is sent.
	Constraint Constraint
	// FailOpen sends a request once more without response_format when
	// the server refuses the constraint itself (a 4xx about it).
	FailOpen bool
	// CallModel keeps the call's model as meta.model (and the model
	// priced) when the call names one: a llama-server names the model
	// file it loaded, not the name it was asked for.
	CallModel bool
	// Describe, when set, words a failed exchange (nil: httpllm.Describe).
	Describe func(ctx context.Context, err error, h httpllm.Hints) *agent.AskError

	subset sync.Map // schema text → its first grammar-subset violation ("" none)
}

// Constraint is when a call with a schema gets response_format.
type Constraint int

const (
	// ConstrainAlways sends it for any schema (builtin.openai, and
	// local_llm's json_schema: true).
	ConstrainAlways Constraint = iota
	// ConstrainNever sends none: the answer is validated only.
	ConstrainNever
	// ConstrainGrammar sends it only for a schema inside the llama.cpp
	// grammar subset (local_llm's grammar: true); meta.grammar_skipped
	// names the first construct outside it.
	ConstrainGrammar
)

// constrain decides whether a call's schema is sent as response_format,
// and records in meta what the flavor reports.
func (a *Agent) constrain(schema json.RawMessage, meta map[string]any) bool {
	f := a.cfg.Flavor
	if f == nil {
		return true
	}
	switch f.Constraint {
	case ConstrainAlways:
		meta["json_schema"] = true
		return true
	case ConstrainGrammar:
		if v := f.grammarViolation(schema); v != "" {
			meta["grammar_skipped"] = v + " is outside the llama.cpp grammar subset"
			return false
		}
		meta["grammar"] = true
		return true
	}
	return false
}

// grammarViolation is the first construct of schema outside the llama.cpp
// grammar subset, cached per schema text.
func (f *Flavor) grammarViolation(schema json.RawMessage) string {
	if v, ok := f.subset.Load(string(schema)); ok {
		return v.(string)
	}
	v := ""
	vs, err := schemapkg.GrammarSubsetViolations(schema)
	switch {
	case err != nil:
		v = "invalid JSON"
	case len(vs) > 0:
		v = vs[0].String()
	}
	f.subset.Store(string(schema), v)
	return v
}

// flavorMeta is the meta every answer of a flavor carries: which
// constraint was applied (none until constrain says so).
func (a *Agent) flavorMeta() map[string]any {
	if a.cfg.Flavor == nil {
		return map[string]any{}
	}
	return map[string]any{"grammar": false, "json_schema": false}
}

// failOpen reports whether err is the server refusing the constraint of
// a constrained request: a 4xx whose body mentions grammar, schema,
// json_schema or response_format (llama-server: "failed to parse
// grammar", "JSON schema conversion failed"; compatible APIs:
// "response_format ... not supported").
func (a *Agent) failOpen(err error, constrained bool) (*httpllm.APIError, bool) {
	var ae *httpllm.APIError
	if !errors.As(err, &ae) || !constrained || a.cfg.Flavor == nil || !a.cfg.Flavor.FailOpen || ae.Status < 400 || ae.Status >= 500 {
		return nil, false
	}
	b := bytes.ToLower(ae.Body)
	for _, w := range []string{"grammar", "json_schema", "json schema", "response_format", "schema"} {
		if bytes.Contains(b, []byte(w)) {
			return ae, true
		}
	}
	return nil, false
}
