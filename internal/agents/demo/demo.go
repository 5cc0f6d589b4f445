// Package demo holds the scripted in-process agent the kitsoki binary wires
// for its bundled example story, so `make demo` runs with no model, no
// network and no API key. It is a stand-in that answers by rule, not an LLM.
package demo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Alias is the agent_plugins alias (declared as builtin.inprocess) that the
// binary binds to the scripted greeter.
const Alias = "agent.demo"

// Register binds the demo agent to Alias when the story declares that alias
// as builtin.inprocess; other stories are untouched.
func Register(r *agent.Registry) {
	if d, ok := r.Declaration(Alias); ok && d.Plugin == agent.PluginInProcess {
		r.RegisterInProcess(Alias, Greeter{})
	}
}

// Greeter answers the hello story's decide call: it composes a greeting for
// with.args.name in with.args.style ("casual" or "formal").
type Greeter struct{}

// Ask composes the greeting.
func (Greeter) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	args, _ := call.Request.With["args"].(map[string]any)
	name, _ := args["name"].(string)
	style, _ := args["style"].(string)
	if name == "" {
		name = "stranger"
	}
	text := fmt.Sprintf("Hey %s, good to see you!", name)
	if style == "formal" {
		text = fmt.Sprintf("Good day, %s. It is a pleasure to make your acquaintance.", name)
	} else {
		style = "casual"
	}
	sub, err := json.Marshal(map[string]any{"text": text, "tone": style, "done": true})
	if err != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "demo greeter: %v", err)
	}
	return &agent.AskResponse{Submission: sub, Meta: map[string]any{"model": "scripted-demo", "cost_usd": 0}}, nil
}

// AnswersInline is true: the greeting is composed from the call alone,
// with nothing to wait for, so the host asks it on the caller's goroutine
// (agent.Inline).
func (Greeter) AnswersInline(*agent.Call) bool { return true }

var _ agent.Inline = Greeter{}

// Close does nothing.
func (Greeter) Close() error { return nil }
