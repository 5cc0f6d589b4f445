package agent

// BackendKeyTypes are the keys of the API backends and the agent CLIs
// (docs/agents): which plugin types take each, so a key written for
// another type is refused instead of ignored, in a story's agent_plugins:
// and in a .kitsoki.yaml profile alike.
var BackendKeyTypes = map[string][]string{
	"base_url":   {PluginAnthropic, PluginOpenAI, PluginCodexCLI, PluginCopilotCLI},
	"api":        {PluginAnthropic, PluginOpenAI, PluginCodexCLI, PluginCopilotCLI},
	"stream":     {PluginAnthropic, PluginOpenAI, PluginLocalLLM},
	"max_tokens": {PluginAnthropic, PluginOpenAI, PluginLocalLLM},
	"max_turns":  {PluginAnthropic, PluginOpenAI, PluginLocalLLM},
	"effort":     {PluginAnthropic, PluginOpenAI, PluginCodexCLI, PluginCopilotCLI},
	"timeout":    {PluginAnthropic, PluginOpenAI, PluginLocalLLM},
	"retries":    {PluginAnthropic, PluginOpenAI, PluginLocalLLM},
	"sandbox":    {PluginCodexCLI, PluginCopilotCLI},
	"approval":   {PluginCodexCLI, PluginCopilotCLI},
	"pricing":    {PluginAnthropic, PluginOpenAI, PluginLocalLLM, PluginCodexCLI, PluginCopilotCLI},
}

// BackendValues is what a plugin type's api:, sandbox: or approval: may
// be; nil when the type sets no bound on the key.
func BackendValues(plugin, key string) []string {
	return backendValues[plugin][key]
}

var backendValues = map[string]map[string][]string{
	PluginAnthropic: {"api": {"messages"}},
	PluginOpenAI:    {"api": {"chat", "responses"}},
	PluginCodexCLI: {"api": {"responses"}, "sandbox": {"read-only", "workspace-write", "danger-full-access"},
		"approval": {"untrusted", "on-failure", "on-request", "never"}},
	PluginCopilotCLI: {"api": {"chat", "responses"}, "sandbox": {"on", "off"}, "approval": {"read-only", "edit", "all"}},
}
