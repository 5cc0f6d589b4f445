package toolserver

import (
	"context"
	"errors"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// LiveCall is what a live agent call's run offers the tools of the
// kanban-task and office-task surfaces: agent.LiveRun, the one definition.
// The host implements it for each agent call it dispatches; every method
// acts on that call's own run, whose ids the session binds, never on one
// named in tool arguments.
type LiveCall = agent.LiveRun

// CallContext is what kitsoki knows about a live agent call beyond the wire
// request: the ids the session binds and the facts its profile is resolved
// from. A transport that launches an MCP-capable agent builds it from the
// call's run (agent.Call.Run); it never travels in a context.
type CallContext struct {
	// RunID is the run (task) the call belongs to; "" means the request's
	// session id.
	RunID string
	// WorkspaceID is the story's app id.
	WorkspaceID string
	// StoryDir is the story directory, the root of file-reading tools.
	StoryDir string
	// Autopilot is the run's autopilot setting; HasParent says whether the
	// run was started by another run.
	Autopilot bool
	HasParent bool
	// TitleOwned is true while the run's title is unset or agent-owned, so
	// the agent may set it.
	TitleOwned bool
	// ToolProviders names the tool providers attached to the run.
	ToolProviders []string
	// Live acts on the run. Nil means a detached call (see Detached).
	Live LiveCall
	// PluginTools supplies plugin-contributed tools; nil means none.
	PluginTools ToolSource
	// Catalog pushes plugin-tool snapshots to the call's session; it
	// takes precedence over PluginTools.
	Catalog *Catalog
}

// ErrDetached is returned by a detached call's run actions.
var ErrDetached = errors.New("this agent call is not attached to a run")

// Detached returns the LiveCall of a call the host attached nothing to: it
// reads the world snapshot sent with the request and refuses every action
// on the run with ErrDetached.
func Detached(world map[string]any) LiveCall { return detached{world} }

type detached struct{ world map[string]any }

func (d detached) World() map[string]any { return d.world }
func (detached) AskOperator(context.Context, string) (string, error) {
	return "", ErrDetached
}
func (detached) AskParent(context.Context, string) (string, error) { return "", ErrDetached }
func (detached) SetTitle(context.Context, string) error            { return ErrDetached }
func (detached) CompleteStep(context.Context, string) error        { return ErrDetached }
func (detached) EmitIntent(context.Context, string, map[string]any) error {
	return ErrDetached
}
