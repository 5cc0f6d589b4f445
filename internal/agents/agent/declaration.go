package agent

import "log/slog"

// Plugin type names accepted in agent_plugins: declarations.
const (
	PluginClaudeCLI  = "builtin.claude_cli"
	PluginInProcess  = "builtin.inprocess"
	PluginSubprocess = "subprocess"
	PluginMCPHTTP    = "mcp_http"
	PluginLocalLLM   = "builtin.local_llm"
)

// PluginTypes lists the declarable plugin types in the order error messages
// name them.
var PluginTypes = []string{PluginClaudeCLI, PluginInProcess, PluginSubprocess, PluginMCPHTTP, PluginLocalLLM}

// DefaultAlias is the alias of the built-in claude agent, injected into every
// story that does not declare it.
const DefaultAlias = "agent.claude"

// Declaration is one agent_plugins: entry after ${VAR} resolution. Fields a
// transport does not use are ignored by it.
type Declaration struct {
	Alias      string
	Plugin     string
	Command    string
	Args       []string
	Env        map[string]string // resolved values
	Endpoint   string
	Tool       string            // mcp_http tool name; "" means "ask"
	Headers    map[string]string // resolved values
	Model      string
	Grammar    bool
	Port       int
	ServerBin  string
	APIKeyEnv  string
	JSONSchema bool
	// Enabled is false for a plugin declared "enabled: false".
	Enabled bool
	// Dir is the story directory: the working directory of spawned plugins.
	Dir string
	// Secrets are the values substituted from ${VAR} references; they must
	// never be written to a trace.
	Secrets []string
	// AgentTools are the tools a subprocess plugin contributes to agents
	// through kitsoki's MCP server, from agent_tools: or the manifest.
	AgentTools []ToolDeclaration
	// Manifest is the absolute path of the manifest the tools were read
	// from, "" when they were declared inline (or not at all).
	Manifest string
}

// BuildEnv is what a transport builder gets besides the declaration.
type BuildEnv struct {
	Logger *slog.Logger
}
