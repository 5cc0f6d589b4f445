package agent

import (
	"log/slog"
	"time"
)

// Plugin type names accepted in agent_plugins: declarations.
const (
	PluginClaudeCLI  = "builtin.claude_cli"
	PluginInProcess  = "builtin.inprocess"
	PluginSubprocess = "subprocess"
	PluginMCPHTTP    = "mcp_http"
	PluginLocalLLM   = "builtin.local_llm"
	PluginAnthropic  = "builtin.anthropic"
	PluginOpenAI     = "builtin.openai"
	PluginCodexCLI   = "builtin.codex_cli"
	PluginCopilotCLI = "builtin.copilot_cli"
)

// PluginTypes lists the declarable plugin types in the order error messages
// name them.
var PluginTypes = []string{PluginClaudeCLI, PluginInProcess, PluginSubprocess, PluginMCPHTTP, PluginLocalLLM,
	PluginAnthropic, PluginOpenAI, PluginCodexCLI, PluginCopilotCLI}

// PluginSummary says in a line what a plugin type is, for kitsoki hosts
// and messages ("" for a type kitsoki does not know).
func PluginSummary(pluginType string) string {
	switch pluginType {
	case PluginClaudeCLI:
		return "the Claude Code CLI (claude -p), handed kitsoki's MCP tools"
	case PluginInProcess:
		return "an agent written in Go, registered by the program that runs the story"
	case PluginSubprocess:
		return "a plugin program speaking JSON-RPC on stdio (command:, args:)"
	case PluginMCPHTTP:
		return "an MCP server's ask tool over HTTP (endpoint:, tool:)"
	case PluginLocalLLM:
		return "a local llama.cpp model: managed (model:) or a server someone runs (endpoint:)"
	case PluginAnthropic:
		return "Anthropic's Messages API with an API key (ANTHROPIC_API_KEY or api_key_env:, base_url:)"
	case PluginOpenAI:
		return "the OpenAI API or any compatible server: Chat Completions or Responses (api:, base_url:, api_key_env:)"
	case PluginCodexCLI:
		return "the OpenAI Codex CLI (codex exec --json), handed kitsoki's MCP tools (sandbox:, approval:)"
	case PluginCopilotCLI:
		return "the GitHub Copilot CLI (copilot, JSON output), handed kitsoki's MCP tools (approval:, sandbox:)"
	}
	return ""
}

// DefaultModel is the model an API backend runs on when neither the
// call's route nor the declaration names one: the API needs a model, and
// the host records the one it resolved. Other plugin types have none ("":
// the agent CLIs have their own defaults).
func DefaultModel(pluginType string) string {
	switch pluginType {
	case PluginAnthropic:
		return "claude-sonnet-4-5"
	case PluginOpenAI:
		return "gpt-4.1-mini"
	}
	return ""
}

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

	// The keys of the API backends (builtin.anthropic, builtin.openai) and
	// the agent CLIs (builtin.codex_cli, builtin.copilot_cli).

	// BaseURL is the API root (base_url:); "" is the provider's own.
	BaseURL string
	// API selects builtin.openai's wire API (api:): "chat" (Chat
	// Completions, the default) or "responses".
	API string
	// Stream is stream: (nil: the transport's default, streaming).
	Stream *bool
	// MaxTokens is max_tokens: the output bound of one request (0: the
	// transport's default).
	MaxTokens int
	// MaxTurns bounds the model round trips of one call (max_turns:; 0:
	// the transport's default).
	MaxTurns int
	// Effort is the default reasoning effort of the agent's calls
	// (effort:); a route's or persona's wins.
	Effort string
	// Timeout bounds the wait for each HTTP response and, while a stream
	// is read, for its next bytes (timeout:; 0: the transport's default).
	Timeout time.Duration
	// Retries is how many times an API request refused with 429 or 5xx
	// (or whose connection failed) is sent again (retries:; nil: the
	// transport's default, 0: never).
	Retries *int
	// Sandbox and Approval are an agent CLI's sandbox and approval modes
	// (sandbox:, approval:); "" is kitsoki's per-verb default.
	Sandbox  string
	Approval string
	// Pricing prices the model's tokens for cost_usd and the cost caps
	// (pricing:); nil uses the built-in price list.
	Pricing *Pricing
	// Quota caps what the agent's calls may cost in one run (a profile's
	// quota:); nil is no cap beyond the run's.
	Quota *Quota
	// Source says where the declaration was written, for messages:
	// "agent_plugins.agent.x" ("" means that, from Alias) or
	// ".kitsoki.yaml profiles.fast".
	Source string
}

// Where names the declaration in a message ("agent_plugins.<alias>", or
// the profile it came from).
func (d Declaration) Where() string {
	if d.Source != "" {
		return d.Source
	}
	return "agent_plugins." + d.Alias
}

// StreamOr is the declaration's stream: setting, def when it has none.
func (d Declaration) StreamOr(def bool) bool {
	if d.Stream == nil {
		return def
	}
	return *d.Stream
}

// RetriesOr is the declaration's retries: setting, def when it has none.
func (d Declaration) RetriesOr(def int) int {
	if d.Retries == nil {
		return def
	}
	return *d.Retries
}

// Pricing is what a model's tokens cost, in US dollars per million
// tokens. Cache prices of 0 are taken from the input price (cache reads
// at the provider's discount, cache writes at its surcharge).
type Pricing struct {
	InputPerMTok      float64
	OutputPerMTok     float64
	CacheReadPerMTok  float64
	CacheWritePerMTok float64
}

// Quota caps one agent's spending in a run: MaxCostUSD dollars (0: no
// cap) and MaxCalls calls (0: no cap).
type Quota struct {
	MaxCostUSD float64
	MaxCalls   int
}

// BuildEnv is what a transport builder gets besides the declaration.
type BuildEnv struct {
	Logger *slog.Logger
}
