package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// GroupSessions is the tool group of the session tools (the external
// surface).
const GroupSessions = "sessions"

// Names of the session tools.
const (
	ToolSessionNew      = "session_new_kitsoki"
	ToolSessionSubmit   = "session_submit_kitsoki"
	ToolSessionContinue = "session_continue_kitsoki"
	ToolSessionInspect  = "session_inspect_kitsoki"
	ToolSessionRender   = "session_render_kitsoki"
	ToolSessionTrace    = "session_trace_kitsoki"
	ToolSessionList     = "session_list_kitsoki"
	ToolSessionFork     = "session_fork_kitsoki"
	ToolSessionDelete   = "session_delete_kitsoki"
)

// Caller says who called a session tool, for the session's trace.
type Caller struct {
	Tool string
	// Client is the caller's MCP session id ("" on stdio).
	Client string
}

// NewSessionRequest asks for a new durable session.
type NewSessionRequest struct {
	// Story is the absolute path of the story's root file.
	Story string
	// Key names the session from outside (transport:thread); ID names it.
	Key, ID string
	World   map[string]any
}

// SessionInput is one input of a turn: an intent with its slots, a typed
// line, free text, or a raw line (typed when it reads as an intent).
type SessionInput struct {
	Intent string
	Slots  map[string]any
	Line   string
	Text   string
	Raw    string
}

// Sessions backs the session tools: the session API over a sessions
// directory (cmd/kitsoki wires internal/run/driver's Pool to it). A
// session's key (transport:thread) or id names it. Values returned are
// frames and index entries, answered as JSON.
type Sessions interface {
	New(ctx context.Context, c Caller, req NewSessionRequest) (any, error)
	Submit(ctx context.Context, c Caller, ref string, in SessionInput) (any, error)
	Continue(ctx context.Context, c Caller, ref string) (any, error)
	Inspect(ctx context.Context, c Caller, ref string) (any, error)
	// Render is the session's state, view and intents as text, as kitsoki
	// run shows them.
	Render(ctx context.Context, c Caller, ref string) (string, error)
	// Trace is the session's JSONL trace.
	Trace(ctx context.Context, ref string) ([]byte, error)
	List(ctx context.Context) (any, error)
	Fork(ctx context.Context, ref string, at int64) (any, error)
	Delete(ctx context.Context, ref string) (any, error)
}

// sessionTools are the session tools, when a Sessions backs them.
func (s *surface) sessionTools(*toolserver.Session, toolserver.Profile) []toolserver.Tool {
	if s.cfg.Sessions == nil {
		return nil
	}
	ref := mcp.WithString("session", mcp.Required(), mcp.Description("The session's key (transport:thread) or id."))
	newT := mcp.NewTool(ToolSessionNew,
		mcp.WithDescription("Start a durable session of a story (its turn 0) and return its frame: state, view, allowed intents with their slots, world, the turn's trace events, exit status."),
		mcp.WithTitleAnnotation("New session"),
		mcp.WithString("story", mcp.Required(), mcp.Description("The story's app.yaml (or its directory), relative to the served directory.")),
		mcp.WithString("key", mcp.Description("Name the session from outside: transport:thread, e.g. jira:PLTFRM-12345.")),
		mcp.WithString("id", mcp.Description("The session id (default: generated).")),
		mcp.WithObject("world", mcp.Description("World variables to seed.")))
	toolserver.Annotate(&newT, false, false, false, true)
	submit := mcp.NewTool(ToolSessionSubmit,
		mcp.WithDescription("Take one input in a session and return the frame of the turn. Give one of: intent (with slots), line (a typed intent line: \"intent key=value ...\"), text (free text, routed to one of the state's intents) or raw (a line read as kitsoki run reads one)."),
		mcp.WithTitleAnnotation("Submit an input"), ref,
		mcp.WithString("intent", mcp.Description("An intent the state allows.")),
		mcp.WithObject("slots", mcp.Description("The intent's slots.")),
		mcp.WithString("line", mcp.Description("A typed intent line.")),
		mcp.WithString("text", mcp.Description("Free text.")),
		mcp.WithString("raw", mcp.Description("A line: typed when it reads as an intent, else free text.")))
	toolserver.Annotate(&submit, false, false, false, true)
	cont := mcp.NewTool(ToolSessionContinue,
		mcp.WithDescription("Pick a session up where its journal stopped (a turn a crash left unfinished is taken again), keep it live, and return its frame."),
		mcp.WithTitleAnnotation("Continue a session"), ref)
	toolserver.Annotate(&cont, false, false, false, true)
	inspect := mcp.NewTool(ToolSessionInspect,
		mcp.WithDescription("Where a session stands, as a frame: state, view, allowed intents with slots, world, background jobs. Takes no turn."),
		mcp.WithTitleAnnotation("Inspect a session"), ref)
	toolserver.Annotate(&inspect, true, false, true, false)
	render := mcp.NewTool(ToolSessionRender,
		mcp.WithDescription("A session's view, state and the intents it accepts, as text (what kitsoki run shows)."),
		mcp.WithTitleAnnotation("Render a session"), ref)
	toolserver.Annotate(&render, true, false, true, false)
	traceT := mcp.NewTool(ToolSessionTrace,
		mcp.WithDescription("A session's JSONL trace (its journal), secrets masked."),
		mcp.WithTitleAnnotation("Session trace"), ref)
	toolserver.Annotate(&traceT, true, false, true, false)
	list := mcp.NewTool(ToolSessionList,
		mcp.WithDescription("The sessions of the sessions directory, most recent activity first: id, key, story, state, turn, finished."),
		mcp.WithTitleAnnotation("List sessions"))
	toolserver.Annotate(&list, true, false, true, false)
	fork := mcp.NewTool(ToolSessionFork,
		mcp.WithDescription("Start a new session from turn at_turn of a session (which is left as it is); returns the new session's index entry."),
		mcp.WithTitleAnnotation("Fork a session"), ref,
		mcp.WithNumber("at_turn", mcp.Required(), mcp.Description("The finished turn to fork from (0 is the start).")))
	toolserver.Annotate(&fork, false, false, false, false)
	del := mcp.NewTool(ToolSessionDelete,
		mcp.WithDescription("Delete a session: its journal, index entry and key."),
		mcp.WithTitleAnnotation("Delete a session"), ref)
	toolserver.Annotate(&del, false, true, true, false)
	return []toolserver.Tool{
		{Def: newT, Handler: s.handleSessionNew},
		{Def: submit, Handler: s.handleSessionSubmit},
		{Def: cont, Handler: s.sessionRef(ToolSessionContinue, s.cfg.Sessions.Continue)},
		{Def: inspect, Handler: s.sessionRef(ToolSessionInspect, s.cfg.Sessions.Inspect)},
		{Def: render, Handler: s.handleSessionRender},
		{Def: traceT, Handler: s.handleSessionTrace},
		{Def: list, Handler: s.handleSessionList},
		{Def: fork, Handler: s.handleSessionFork},
		{Def: del, Handler: s.handleSessionDelete},
	}
}

// caller names the MCP client of a call.
func caller(ctx context.Context, tool string) Caller {
	c := Caller{Tool: tool}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		c.Client = cs.SessionID()
	}
	return c
}

func (s *surface) handleSessionNew(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Story string         `json:"story"`
		Key   string         `json:"key"`
		ID    string         `json:"id"`
		World map[string]any `json:"world"`
	}
	if err := req.BindArguments(&args); err != nil {
		return toolserver.ToolError("arguments: %v", err), nil
	}
	path, err := s.storyPath(args.Story)
	if err != nil {
		return toolserver.ToolError("story: %v", err), nil
	}
	f, err := s.cfg.Sessions.New(ctx, caller(ctx, ToolSessionNew), NewSessionRequest{Story: path, Key: args.Key, ID: args.ID, World: args.World})
	return sessionResult(f, err)
}

func (s *surface) handleSessionSubmit(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Session string         `json:"session"`
		Intent  string         `json:"intent"`
		Slots   map[string]any `json:"slots"`
		Line    string         `json:"line"`
		Text    string         `json:"text"`
		Raw     string         `json:"raw"`
	}
	if err := req.BindArguments(&args); err != nil {
		return toolserver.ToolError("arguments: %v", err), nil
	}
	n := 0
	for _, v := range []string{args.Intent, args.Line, args.Text, args.Raw} {
		if v != "" {
			n++
		}
	}
	if n != 1 || (args.Slots != nil && args.Intent == "") {
		return toolserver.ToolError("give one input: intent (with slots), line, text or raw"), nil
	}
	in := SessionInput{Intent: args.Intent, Slots: args.Slots, Line: args.Line, Text: args.Text, Raw: args.Raw}
	f, err := s.cfg.Sessions.Submit(ctx, caller(ctx, ToolSessionSubmit), args.Session, in)
	return sessionResult(f, err)
}

// sessionRef answers a tool whose one argument is the session.
func (s *surface) sessionRef(tool string, fn func(context.Context, Caller, string) (any, error)) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ref, err := req.RequireString("session")
		if err != nil {
			return toolserver.ToolError("%v", err), nil
		}
		return sessionResult(fn(ctx, caller(ctx, tool), ref))
	}
}

func (s *surface) handleSessionRender(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ref, err := req.RequireString("session")
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	text, err := s.cfg.Sessions.Render(ctx, caller(ctx, ToolSessionRender), ref)
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	return mcp.NewToolResultText(text), nil
}

func (s *surface) handleSessionTrace(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ref, err := req.RequireString("session")
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	b, err := s.cfg.Sessions.Trace(ctx, ref)
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	return mcp.NewToolResultText(string(b)), nil
}

func (s *surface) handleSessionList(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	all, err := s.cfg.Sessions.List(ctx)
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	return toolserver.JSONResult(map[string]any{"sessions": all}), nil
}

func (s *surface) handleSessionFork(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ref, err := req.RequireString("session")
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	at, err := req.RequireFloat("at_turn")
	if err != nil || at < 0 || at != float64(int64(at)) {
		return toolserver.ToolError("at_turn: a whole number of turns from 0"), nil
	}
	return sessionResult(s.cfg.Sessions.Fork(ctx, ref, int64(at)))
}

func (s *surface) handleSessionDelete(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ref, err := req.RequireString("session")
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	return sessionResult(s.cfg.Sessions.Delete(ctx, ref))
}

// sessionResult answers with v as JSON, or the error as a tool error the
// client can act on (a busy session says to try again).
func sessionResult(v any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return toolserver.ToolError("%v", err), nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return mcp.NewToolResultText(string(raw)), nil
	}
	if v == nil {
		return toolserver.ToolError("%s", fmt.Errorf("no result")), nil
	}
	return toolserver.JSONResult(v), nil
}
