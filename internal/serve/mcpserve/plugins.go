package mcpserve

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// PluginControl is the live plugin lifecycle a configuration session may
// inspect and change: the plugins of the kitsoki process serving it.
// Enabling or disabling a plugin recomputes the plugin-tool catalog, which
// reaches every live agent session without restarting anything.
type PluginControl interface {
	// PluginStatus lists the plugins that declare agent tools, by alias.
	PluginStatus() []PluginStatus
	// SetPluginEnabled enables or disables plugin alias and returns its
	// new status.
	SetPluginEnabled(ctx context.Context, alias string, enabled bool) (PluginStatus, error)
}

// PluginStatus is one plugin's lifecycle state and the tools it offers.
type PluginStatus struct {
	Alias string `json:"alias"`
	// State is active, disabled or errored.
	State string `json:"state"`
	// Detail says why an errored plugin is errored.
	Detail string `json:"detail,omitempty"`
	// Tools are the exposed names of the plugin's declared tools (offered
	// only while it is active).
	Tools []string `json:"tools"`
}

// Names of the live plugin controls.
const (
	ToolPluginStatus     = "agent_plugin_status_kitsoki"
	ToolSetPluginEnabled = "set_agent_plugin_enabled_kitsoki"
)

// pluginControlTools are the configuration tools acting on the serving
// process's live plugins; they are offered only when the session has a
// PluginControl.
func (s *surface) pluginControlTools() []toolserver.Tool {
	pc := s.cfg.Plugins
	if pc == nil {
		return nil
	}
	status := mcp.NewTool(ToolPluginStatus,
		mcp.WithDescription("List the live run's agent plugins that contribute tools: each plugin's state (active, disabled, errored) and the tools it declares."),
		mcp.WithTitleAnnotation("Agent plugin status"))
	toolserver.Annotate(&status, true, false, true, false)
	set := mcp.NewTool(ToolSetPluginEnabled,
		mcp.WithDescription("Enable or disable an agent plugin of the live run. Its tools appear in, or disappear from, every running agent's tool list at once; calls in flight to a disabled plugin are cancelled."),
		mcp.WithTitleAnnotation("Enable or disable an agent plugin"),
		mcp.WithString("alias", mcp.Required(), mcp.Description("The plugin alias, e.g. agent.tagger.")),
		mcp.WithBoolean("enabled", mcp.Required(), mcp.Description("true to enable, false to disable.")))
	toolserver.Annotate(&set, false, false, true, false)
	return []toolserver.Tool{
		{Def: status, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolserver.JSONResult(map[string]any{"plugins": pc.PluginStatus()}), nil
		}},
		{Def: set, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			alias, err := req.RequireString("alias")
			if err != nil {
				return toolserver.ToolError("%v", err), nil
			}
			enabled, err := req.RequireBool("enabled")
			if err != nil {
				return toolserver.ToolError("%v", err), nil
			}
			st, err := pc.SetPluginEnabled(ctx, alias, enabled)
			if err != nil {
				return toolserver.ToolError("%v", err), nil
			}
			return toolserver.JSONResult(st), nil
		}},
	}
}

// exposedTools lists the names agents see for a plugin's declared tools.
func exposedTools(alias string, tools []agent.ToolDeclaration) []string {
	var out []string
	for _, t := range tools {
		out = append(out, agent.ExposedToolName(alias, t.Name))
	}
	return out
}
