package plugin

import (
	"context"
	"encoding/json"
	"fmt"
)

// Agent is what a plugin author implements: answer one agent call. The
// same Agent can be served over stdio (Serve) and over MCP (MCPHandler).
//
// Ask may be called concurrently: kitsoki can have several calls in flight
// on one plugin process. ctx is cancelled when the plugin is told to stop;
// req.Deadline is kitsoki's soft deadline for the answer.
type Agent interface {
	Ask(ctx context.Context, req *AskRequest) (*AskResponse, error)
}

// AgentFunc adapts a function to an Agent.
type AgentFunc func(ctx context.Context, req *AskRequest) (*AskResponse, error)

// Ask calls f.
func (f AgentFunc) Ask(ctx context.Context, req *AskRequest) (*AskResponse, error) {
	return f(ctx, req)
}

// JSON-RPC error codes the subprocess protocol uses.
const (
	// CodeParseError: a request line was not valid UTF-8 JSON, or too long.
	CodeParseError = -32700
	// CodeInvalidRequest: a JSON object that is not a JSON-RPC request.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: a method other than agent.ask.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: agent.ask params that do not decode as AskRequest.
	CodeInvalidParams = -32602
	// CodeAgentError is the code of an error returned by Agent.Ask that is
	// not a *Error. Kitsoki reports any JSON-RPC error as a plugin_crash
	// carrying the code and message.
	CodeAgentError = -32000
)

// MethodAsk is the JSON-RPC method of an agent call.
const MethodAsk = "agent.ask"

// Error is an error with a JSON-RPC code, for an Agent that wants to choose
// the code and attach data. Any other error is sent with CodeAgentError and
// its Error() text as the message.
type Error struct {
	Code    int64
	Message string
	Data    any
}

// Error returns the message with its code.
func (e *Error) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Errorf returns a *Error with CodeAgentError and a formatted message.
func Errorf(format string, args ...any) *Error {
	return &Error{Code: CodeAgentError, Message: fmt.Sprintf(format, args...)}
}

// Submit builds a response whose submission is v encoded as JSON. It is the
// usual way to answer: return plugin.Submit(verdict).
func Submit(v any) (*AskResponse, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode submission: %w", err)
	}
	return &AskResponse{Submission: b}, nil
}
