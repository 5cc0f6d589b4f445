package copilotcli

import (
	"encoding/json"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/clirun"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// submitInstructions go before the prompt of a call with a schema.
const submitInstructions = "Deliver your result by calling the " + toolloop.Submit + " tool of the " + toolserver.ServerName +
	" MCP server: its input schema is the shape of the result. If it returns an error, correct the arguments and call it again. " +
	"If you cannot call it, end with only the result as JSON."

// run is everything one call decided before starting the CLI.
type run struct {
	model, effort string
	approval      string
	mcpConfig     string // the --additional-mcp-config file
	usageFile     string // the --usage-output-file file
	session       string // --session-id of a converse call
	resumed       bool   // the session is one an earlier call started
	secretEnv     []string
}

// args builds the CLI's arguments: JSONL output, no update, no question
// to the user (an agent call asks through kitsoki's tools), no built-in
// MCP servers (they need GitHub), kitsoki's MCP server and its tools
// approved, the tool approvals of the call's mode, the sandbox, model and
// reasoning effort, the usage file, the session of a converse call, the
// environment variables to redact, and the declaration's args. The
// prompt goes on stdin.
func (a *Agent) args(r run) []string {
	args := []string{"--output-format", "json", "--no-auto-update", "--no-ask-user", "--disable-builtin-mcps", "--log-level", "none",
		"--additional-mcp-config", "@" + r.mcpConfig, "--allow-tool", toolserver.ServerName}
	switch r.approval {
	case ApprovalAll:
		args = append(args, "--allow-all-tools")
	case ApprovalEdit:
		args = append(args, "--allow-tool", "write", "--deny-tool", "shell")
	default:
		args = append(args, "--deny-tool", "write", "--deny-tool", "shell")
	}
	if a.decl.Sandbox == "on" {
		args = append(args, "--sandbox")
	}
	if r.model != "" {
		args = append(args, "--model", r.model)
	}
	if r.effort != "" {
		args = append(args, "--reasoning-effort", r.effort)
	}
	args = append(args, "--usage-output-file", r.usageFile)
	if r.session != "" {
		args = append(args, "--session-id", r.session)
	}
	if len(r.secretEnv) > 0 {
		args = append(args, "--secret-env-vars", strings.Join(r.secretEnv, ","))
	}
	return append(args, a.decl.Args...)
}

// mcpConfig is the --additional-mcp-config document: kitsoki's server,
// over HTTP with the session's bearer token, all its tools.
func mcpConfig(url, token string) []byte {
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		toolserver.ServerName: map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer " + token}, "tools": []string{"*"}},
	}})
	return b
}

// prompt is what goes on stdin: the persona's system prompt and, with a
// schema, how to deliver the result, before the call's prompt (the CLI
// takes no system prompt).
func prompt(c *agent.Call, hasSchema bool) string {
	var parts []string
	if p := c.Persona; p != nil && p.SystemPrompt != "" {
		parts = append(parts, p.SystemPrompt)
	}
	if hasSchema {
		parts = append(parts, submitInstructions)
	}
	return strings.Join(append(parts, c.Request.Prompt), "\n\n")
}

// providerEnv is the environment of Copilot's BYOK mode when base_url: is
// set: the provider, its key (api_key_env's value), its wire API, the
// model, and offline (no GitHub, no telemetry).
func (a *Agent) providerEnv(model string) (map[string]string, []string) {
	if a.decl.BaseURL == "" {
		return nil, nil
	}
	env := map[string]string{"COPILOT_PROVIDER_BASE_URL": strings.TrimRight(a.decl.BaseURL, "/"), "COPILOT_OFFLINE": "true",
		"COPILOT_PROVIDER_WIRE_API": "completions"}
	if a.decl.API == "responses" {
		env["COPILOT_PROVIDER_WIRE_API"] = "responses"
	}
	if model != "" {
		env["COPILOT_MODEL"] = model
	}
	var secrets []string
	if name := a.decl.APIKeyEnv; name != "" {
		if v, ok := a.lookup(name); ok && v != "" {
			env["COPILOT_PROVIDER_API_KEY"] = v
			secrets = append(secrets, v)
		}
	}
	return env, secrets
}

// lookup reads a variable of the child's base environment (or the
// declaration's env:).
func (a *Agent) lookup(name string) (string, bool) {
	if _, ok := a.decl.Env[name]; !ok && a.opts.LookupEnv != nil {
		return a.opts.LookupEnv(name)
	}
	return clirun.Lookup(name, a.decl.Env, a.opts.Environ)
}
