package codexcli

import (
	"encoding/json"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// submitInstructions are added to the developer instructions of a call
// with a schema.
const submitInstructions = "Deliver your result by calling the " + toolloop.Submit + " tool of the " + toolserver.ServerName +
	" MCP server: its input schema is the shape of the result. If it returns an error, correct the arguments and call it again. " +
	"If you cannot call it, end with only the result as JSON."

// run is everything one call decided before starting the CLI.
type run struct {
	model, effort     string
	sandbox, approval string
	mcpURL            string
	schemaFile        string // --output-schema, "" for none
	dir               string
	resume            string // the thread a converse call continues
	ephemeral         bool
	instructions      string
}

// args builds the CLI's arguments: exec (or exec resume <thread>) with
// JSONL events, no git-repository check, the sandbox mode and approval
// policy, the model and reasoning effort, kitsoki's MCP server (its
// bearer token in $KITSOKI_MCP_TOKEN), the developer instructions, the
// output schema, the working directory, the model provider when
// base_url: is set, the declaration's args, and "-": the prompt on stdin.
// Settings go as -c key=value (TOML values), which exec and exec resume
// both take.
func (a *Agent) args(r run) []string {
	args := []string{"exec"}
	if r.resume != "" {
		args = append(args, "resume", r.resume)
	}
	args = append(args, "--json", "--skip-git-repo-check")
	if r.ephemeral {
		args = append(args, "--ephemeral")
	}
	set := func(key, value string) { args = append(args, "-c", key+"="+toml(value)) }
	set("sandbox_mode", r.sandbox)
	set("approval_policy", r.approval)
	if r.model != "" {
		args = append(args, "-m", r.model)
	}
	if r.effort != "" {
		set("model_reasoning_effort", r.effort)
	}
	set("mcp_servers."+toolserver.ServerName+".url", r.mcpURL)
	set("mcp_servers."+toolserver.ServerName+".bearer_token_env_var", TokenEnv)
	if r.instructions != "" {
		set("developer_instructions", r.instructions)
	}
	if r.schemaFile != "" {
		args = append(args, "--output-schema", r.schemaFile)
	}
	if r.dir != "" && r.resume == "" {
		args = append(args, "-C", r.dir)
	}
	if a.decl.BaseURL != "" {
		p := "model_providers." + ProviderID + "."
		set("model_provider", ProviderID)
		set(p+"name", ProviderID)
		set(p+"base_url", strings.TrimRight(a.decl.BaseURL, "/"))
		set(p+"wire_api", "responses")
		if a.decl.APIKeyEnv != "" {
			set(p+"env_key", a.decl.APIKeyEnv)
		}
		if n := a.decl.RetriesOr(-1); n >= 0 {
			args = append(args, "-c", p+"request_max_retries="+itoa(n), "-c", p+"stream_max_retries="+itoa(n))
		}
	}
	args = append(args, a.decl.Args...)
	return append(args, "-")
}

// instructions are the persona's system prompt and, with a schema, how
// to deliver the result.
func instructions(c *agent.Call, hasSchema bool) string {
	var parts []string
	if p := c.Persona; p != nil && p.SystemPrompt != "" {
		parts = append(parts, p.SystemPrompt)
	}
	if hasSchema {
		parts = append(parts, submitInstructions)
	}
	return strings.Join(parts, "\n\n")
}

// toml quotes s as a TOML basic string: JSON's string escapes are TOML's
// (encoding/json writes no \/).
func toml(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
