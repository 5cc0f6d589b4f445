package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// StoryLoader loads and validates the story whose root file is path
// (absolute), every file it reads confined to the workspace directory. A
// failed load's error text lists one diagnostic per line.
type StoryLoader func(ctx context.Context, path, workspace string) (*story.Story, error)

// StartRunRequest asks for a new run of a story.
type StartRunRequest struct {
	// Story is the absolute path of the story's root file.
	Story string
	// Workspace is the directory every file the story reads must stay
	// inside.
	Workspace string
	// Intents are fed to the run in order, each a line as `kitsoki run`
	// reads one: "intent key=value ...", or free text, which is routed.
	Intents []string
	// Say are free-text turns, each routed even if it looks like a typed
	// intent (as --say); not together with Intents.
	Say []string
	// World seeds world variables.
	World map[string]any
	// Title is the run's title, if the caller has one.
	Title string
}

// StartRunResult describes the run StartRun started.
type StartRunResult struct {
	RunID    string `json:"run_id"`
	State    string `json:"state"`
	Terminal bool   `json:"terminal"`
	Trace    string `json:"trace,omitempty"`
	// Routes say how each free-text turn was routed, in order.
	Routes []RouteResult `json:"routes,omitempty"`
}

// RouteResult is how one free-text turn was routed (the trace's
// turn.routed).
type RouteResult struct {
	Input      string         `json:"input"`
	Tier       string         `json:"tier"`
	Intent     string         `json:"intent"`
	Slots      map[string]any `json:"slots,omitempty"`
	Confidence float64        `json:"confidence"`
}

// RunStarter starts a run; it backs create_task_kitsoki.
type RunStarter func(ctx context.Context, req StartRunRequest) (*StartRunResult, error)

// Names of the configuration and external tools.
const (
	ToolValidateStory  = "validate_story_kitsoki"
	ToolInspectStory   = "inspect_story_kitsoki"
	ToolListPlugins    = "list_agent_plugins_kitsoki"
	ToolValidateSchema = "validate_schema_kitsoki"
	ToolCreateTask     = "create_task_kitsoki"
)

// DefaultStoryFile is the root file looked for when a story path names a
// directory.
const DefaultStoryFile = "app.yaml"

// configurationTools inspect and validate stories, plugin declarations and
// schemas under the session's Root. Story tools need a StoryLoader and are
// left out without one.
func (s *surface) configurationTools(*toolserver.Session, toolserver.Profile) []toolserver.Tool {
	pathArg := mcp.WithString("path", mcp.Required(), mcp.Description("The story's app.yaml (or its directory), relative to the served directory."))
	var out []toolserver.Tool
	if s.cfg.LoadStory != nil {
		validate := mcp.NewTool(ToolValidateStory,
			mcp.WithDescription("Load a story and report every load error (file:line:col: key.path: message) and warning."),
			mcp.WithTitleAnnotation("Validate story"), pathArg)
		toolserver.Annotate(&validate, true, false, true, false)
		inspect := mcp.NewTool(ToolInspectStory,
			mcp.WithDescription("Summarise a story: app, root state, states with the intents they accept, intents with their slots, agents, hosts."),
			mcp.WithTitleAnnotation("Inspect story"), pathArg)
		toolserver.Annotate(&inspect, true, false, true, false)
		plugins := mcp.NewTool(ToolListPlugins,
			mcp.WithDescription("List a story's agent_plugins declarations (after validation). Environment and header values are never shown, only their names."),
			mcp.WithTitleAnnotation("List agent plugins"), pathArg)
		toolserver.Annotate(&plugins, true, false, true, false)
		out = append(out,
			toolserver.Tool{Def: validate, Handler: s.storyHandler(validateStory)},
			toolserver.Tool{Def: inspect, Handler: s.storyHandler(inspectStory)},
			toolserver.Tool{Def: plugins, Handler: s.storyHandler(listPlugins)},
		)
	}
	sch := mcp.NewTool(ToolValidateSchema,
		mcp.WithDescription("Compile a JSON Schema file ($refs must stay inside the served directory) and, when an instance is given, validate it."),
		mcp.WithTitleAnnotation("Validate schema"),
		mcp.WithString("path", mcp.Required(), mcp.Description("The schema file, relative to the served directory.")),
		mcp.WithAny("instance", mcp.Description("A JSON value to validate against the schema.")))
	toolserver.Annotate(&sch, true, false, true, false)
	out = append(out, toolserver.Tool{Def: sch, Handler: s.handleValidateSchema})
	return append(out, s.pluginControlTools()...)
}

// externalTools: start a run.
func (s *surface) externalTools(*toolserver.Session, toolserver.Profile) []toolserver.Tool {
	if s.cfg.StartRun == nil {
		return nil
	}
	t := mcp.NewTool(ToolCreateTask,
		mcp.WithDescription("Start a run of a story, optionally feeding it intents (\"intent key=value ...\", or free text, which is routed to an intent) or free-text turns (say), and seeding world variables. Returns the run id, the state it reached and how each free-text turn was routed."),
		mcp.WithTitleAnnotation("Start a run"),
		mcp.WithString("story", mcp.Required(), mcp.Description("The story's app.yaml (or its directory), relative to the served directory.")),
		mcp.WithArray("intents", mcp.Description("Intents to feed, in order; a line that is not \"intent key=value ...\" is free text and is routed."), mcp.WithStringItems()),
		mcp.WithArray("say", mcp.Description("Free-text turns to route and feed, in order (not with intents)."), mcp.WithStringItems()),
		mcp.WithObject("world", mcp.Description("World variables to seed.")),
		mcp.WithString("title", mcp.Description("The run's title.")))
	toolserver.Annotate(&t, false, false, false, true)
	return []toolserver.Tool{{Def: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Story   string         `json:"story"`
			Intents []string       `json:"intents"`
			Say     []string       `json:"say"`
			World   map[string]any `json:"world"`
			Title   string         `json:"title"`
		}
		if err := req.BindArguments(&args); err != nil {
			return toolserver.ToolError("arguments: %v", err), nil
		}
		if len(args.Intents) > 0 && len(args.Say) > 0 {
			return toolserver.ToolError("intents and say cannot be combined: give the turns as one of them (free text works in intents too)"), nil
		}
		path, err := s.storyPath(args.Story)
		if err != nil {
			return toolserver.ToolError("story: %v", err), nil
		}
		res, err := s.cfg.StartRun(ctx, StartRunRequest{Story: path, Workspace: s.workspace(), Intents: args.Intents, Say: args.Say, World: args.World, Title: args.Title})
		if err != nil {
			return toolserver.ToolError("could not start the run: %v", err), nil
		}
		return toolserver.JSONResult(res), nil
	}}}
}

// storyHandler loads the story named by the "path" argument and answers
// with fn's view of it.
func (s *surface) storyHandler(fn func(path string, st *story.Story, err error) (any, error)) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, err := req.RequireString("path")
		if err != nil {
			return toolserver.ToolError("%v", err), nil
		}
		path, err := s.storyPath(p)
		if err != nil {
			return toolserver.ToolError("path: %v", err), nil
		}
		st, loadErr := s.cfg.LoadStory(ctx, path, s.workspace())
		out, err := fn(s.rel(path), st, loadErr)
		// The story's own secrets are masked in what the tool says of it.
		var mask *secret.Masker
		if st != nil {
			mask = secret.New(st.Secrets)
		}
		if err != nil {
			return toolserver.MaskResult(mask, toolserver.ToolError("%v", err)), nil
		}
		return toolserver.MaskResult(mask, toolserver.JSONResult(out)), nil
	}
}

func validateStory(path string, st *story.Story, err error) (any, error) {
	res := map[string]any{"path": path, "ok": err == nil, "errors": []string{}, "warnings": []string{}}
	if err != nil {
		res["errors"] = splitLines(err.Error())
		return res, nil
	}
	var warnings []string
	for _, d := range st.Warnings {
		warnings = append(warnings, diagString(d))
	}
	if warnings != nil {
		res["warnings"] = warnings
	}
	return res, nil
}

func inspectStory(path string, st *story.Story, err error) (any, error) {
	if err != nil {
		return nil, fmt.Errorf("story %s does not load:\n%v", path, err)
	}
	type stateView struct {
		Name        string   `json:"name"`
		Description string   `json:"description,omitempty"`
		Terminal    bool     `json:"terminal,omitempty"`
		Intents     []string `json:"intents,omitempty"`
	}
	type intentView struct {
		Name        string   `json:"name"`
		Description string   `json:"description,omitempty"`
		Slots       []string `json:"slots,omitempty"`
	}
	type agentView struct {
		Name  string   `json:"name"`
		Model string   `json:"model,omitempty"`
		Tools []string `json:"tools,omitempty"`
	}
	var states []stateView
	for _, name := range sortedKeys(st.States) {
		s := st.States[name]
		states = append(states, stateView{Name: name, Description: s.Description, Terminal: s.Terminal, Intents: sortedKeys(s.On)})
	}
	var intents []intentView
	for _, name := range sortedKeys(st.Intents) {
		in := st.Intents[name]
		slots := append([]string(nil), in.SlotOrder...)
		if len(slots) == 0 {
			slots = sortedKeys(in.Slots)
		}
		intents = append(intents, intentView{Name: name, Description: in.Description, Slots: slots})
	}
	var agents []agentView
	for _, name := range sortedKeys(st.Agents) {
		a := st.Agents[name]
		agents = append(agents, agentView{Name: name, Model: a.Model, Tools: a.Tools})
	}
	return map[string]any{
		"path":    path,
		"app":     appView(st.App),
		"root":    st.Root,
		"hosts":   st.Hosts,
		"states":  states,
		"intents": intents,
		"agents":  agents,
		"plugins": sortedKeys(st.Plugins),
	}, nil
}

// appView is the story's app: block; author and license only when set.
func appView(a story.App) map[string]any {
	v := map[string]any{"id": a.ID, "version": a.Version, "title": a.Title}
	if a.Author != "" {
		v["author"] = a.Author
	}
	if a.License != "" {
		v["license"] = a.License
	}
	return v
}

func listPlugins(path string, st *story.Story, err error) (any, error) {
	if err != nil {
		return nil, fmt.Errorf("story %s does not load:\n%v", path, err)
	}
	type pluginView struct {
		Alias      string   `json:"alias"`
		Plugin     string   `json:"plugin"`
		Enabled    bool     `json:"enabled"`
		Command    string   `json:"command,omitempty"`
		Args       []string `json:"args,omitempty"`
		Endpoint   string   `json:"endpoint,omitempty"`
		Tool       string   `json:"tool,omitempty"`
		Model      string   `json:"model,omitempty"`
		EnvKeys    []string `json:"env_keys,omitempty"`
		HeaderKeys []string `json:"header_keys,omitempty"`
		// AgentTools are the exposed names of the declared agent tools.
		AgentTools []string `json:"agent_tools,omitempty"`
	}
	var out []pluginView
	for _, alias := range sortedKeys(st.Plugins) {
		d := st.Plugins[alias]
		out = append(out, pluginView{
			Alias: alias, Plugin: d.Plugin, Enabled: d.Enabled, Command: d.Command, Args: d.Args,
			Endpoint: d.Endpoint, Tool: d.Tool, Model: d.Model,
			EnvKeys: sortedKeys(d.Env), HeaderKeys: sortedKeys(d.Headers),
			AgentTools: exposedTools(alias, d.AgentTools),
		})
	}
	return map[string]any{"path": path, "plugins": out}, nil
}

func (s *surface) handleValidateSchema(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := req.RequireString("path")
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	path, err := s.inRoot(p)
	if err != nil {
		return toolserver.ToolError("path: %v", err), nil
	}
	c, err := schema.NewCompiler(s.root())
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	defer c.Close()
	sch, err := c.Compile(path)
	if err != nil {
		return toolserver.JSONResult(map[string]any{"path": s.rel(path), "compiles": false, "error": err.Error()}), nil
	}
	res := map[string]any{"path": s.rel(path), "compiles": true}
	if inst, ok := req.GetArguments()["instance"]; ok {
		b, err := json.Marshal(inst)
		if err != nil {
			return toolserver.ToolError("instance: %v", err), nil
		}
		_, verr := sch.ValidateJSON(b)
		res["valid"] = verr == nil
		var ie *schema.InvalidError
		switch {
		case errors.As(verr, &ie) && ie.Parse == nil:
			res["violations"] = ie.Violations
		case verr != nil:
			res["violations"] = []string{verr.Error()}
		}
	}
	return toolserver.JSONResult(res), nil
}

// root is the directory configuration tools are confined to.
func (s *surface) root() string {
	if s.cfg.Root != "" {
		return s.cfg.Root
	}
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// workspace is the directory stories loaded by the tools are confined to:
// the configured workspace, else the served directory.
func (s *surface) workspace() string {
	if s.cfg.Workspace != "" {
		return s.cfg.Workspace
	}
	return s.root()
}

// inRoot resolves p (relative to the root, or absolute) to an absolute path
// that stays inside the root, symlinks included.
func (s *surface) inRoot(p string) (string, error) {
	return toolserver.Confine(s.root(), p)
}

// storyPath resolves a story argument to its root file.
func (s *surface) storyPath(p string) (string, error) {
	path, err := s.inRoot(p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, DefaultStoryFile)
	}
	return path, nil
}

// rel renders an absolute path inside the root relative to it.
func (s *surface) rel(path string) string {
	if r, err := filepath.Rel(s.root(), path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func diagString(d story.Diagnostic) string {
	var b strings.Builder
	b.WriteString(d.Pos.File)
	if d.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Pos.Line, max(d.Pos.Col, 1))
	}
	b.WriteString(": ")
	if d.Path != "" {
		b.WriteString(d.Path + ": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return slices.Clip(out)
}
