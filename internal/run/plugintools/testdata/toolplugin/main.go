// Command toolplugin is the plugin the plugintools tests run: a Go SDK
// plugin whose agent tools misbehave on purpose. Every request it gets is
// appended as one JSON line to the file named by TOOLPLUGIN_LOG, so tests
// can tell which calls reached it, with which arguments and context, and
// which were cancelled.
//
// TOOLPLUGIN_MODE=notools serves an agent without InvokeAgentTool;
// TOOLPLUGIN_MODE=unimplemented one that embeds the SDK's unimplemented
// base. Otherwise the tools are:
//
//	record   answers with its arguments and context as structured content
//	wait     blocks until cancelled, then logs "cancelled"
//	crash    exits with status 3
//	notext   answers structured content without text
//	big      answers text of "bytes" bytes
//	badout   answers structured content that is not an object of strings
//	fail     answers is_error with text
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/plugin"
)

type tools struct{}

var logMu sync.Mutex

// note appends one event to the log file.
func note(ev map[string]any) {
	path := os.Getenv("TOOLPLUGIN_LOG")
	if path == "" {
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolplugin:", err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(ev)
	f.Write(append(b, '\n'))
}

func (tools) Ask(_ context.Context, req *plugin.AskRequest) (*plugin.AskResponse, error) {
	return plugin.Submit(req.Prompt)
}

func (tools) InvokeAgentTool(ctx context.Context, req *plugin.AgentToolRequest) (*plugin.AgentToolResult, error) {
	note(map[string]any{"event": "invoke", "name": req.Name, "invocation_id": req.InvocationID,
		"arguments": req.Arguments, "context": req.Context})
	switch req.Name {
	case "record":
		return &plugin.AgentToolResult{Text: "recorded " + req.InvocationID, StructuredContent: map[string]any{
			"arguments": req.Arguments, "invocation_id": req.InvocationID,
			"task_id": req.Context.TaskID, "session_id": req.Context.SessionID,
			"workspace_id": req.Context.WorkspaceID, "surface": req.Context.Surface,
		}}, nil
	case "wait":
		<-ctx.Done()
		note(map[string]any{"event": "cancelled", "invocation_id": req.InvocationID})
		return nil, ctx.Err()
	case "crash":
		fmt.Fprintln(os.Stderr, "toolplugin: crashing on purpose")
		os.Exit(3)
	case "notext":
		return &plugin.AgentToolResult{StructuredContent: map[string]any{"ok": true}}, nil
	case "big":
		n, _ := req.Arguments["bytes"].(float64)
		return &plugin.AgentToolResult{Text: strings.Repeat("x", int(n))}, nil
	case "badout":
		return &plugin.AgentToolResult{Text: "bad", StructuredContent: map[string]any{"count": "three"}}, nil
	case "fail":
		return &plugin.AgentToolResult{Text: "the tag does not exist", IsError: true}, nil
	}
	return nil, plugin.Errorf("unknown tool %q", req.Name)
}

// askOnly answers agent calls and declares no tool method.
type askOnly struct{}

func (askOnly) Ask(_ context.Context, req *plugin.AskRequest) (*plugin.AskResponse, error) {
	return plugin.Submit(req.Prompt)
}

// unimplemented embeds the SDK's base.
type unimplemented struct {
	askOnly
	plugin.UnimplementedAgentToolPlugin
}

func main() {
	var a plugin.Agent = tools{}
	switch os.Getenv("TOOLPLUGIN_MODE") {
	case "notools":
		a = askOnly{}
	case "unimplemented":
		a = unimplemented{}
	}
	if err := plugin.Serve(a); err != nil {
		fmt.Fprintln(os.Stderr, "toolplugin:", err)
		os.Exit(1)
	}
}
