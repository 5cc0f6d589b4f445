package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
)

// JSON-RPC methods of host plugins (docs/plugins.md, "Host plugins").
const (
	// MethodHostInvoke is one call of a host plugin's handler: params
	// HostInvokeRequest, result HostInvokeResult.
	MethodHostInvoke = "host.invoke"
	// MethodHostDescribe asks a host plugin for its ops (optional): no
	// params, result HostDescribeResult.
	MethodHostDescribe = "host.describe"
)

// HostInvokeRequest is one invoke of host.<name>.<op> a story made.
type HostInvokeRequest struct {
	// Handler is the host plugin's name as declared (host.tickets).
	Handler string `json:"handler"`
	// Op is the rest of the invoke name (create for host.tickets.create);
	// "" when the story invoked the handler's name itself.
	Op string `json:"op"`
	// Args is the invoke's with: map as rendered for the call.
	Args map[string]any `json:"args"`
	// Context says where the call comes from.
	Context HostCallContext `json:"context"`
}

// HostCallContext identifies the call a host.invoke answers.
type HostCallContext struct {
	SessionID string `json:"session_id"`
	Turn      int64  `json:"turn"`
	StatePath string `json:"state_path"`
	// CallID is stable for the call within its session (a retry of the
	// same call in the same place gets the same id).
	CallID string `json:"call_id"`
}

// HostInvokeResult is a host plugin's answer: Data is what the invoke's
// bind: reads (result.<key>).
type HostInvokeResult struct {
	Data map[string]any `json:"data"`
}

// HostOpInfo describes one op in a host.describe answer.
type HostOpInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// ArgsSchema is a JSON Schema the op's args must satisfy; kitsoki
	// validate checks a story's literal with: maps against it.
	ArgsSchema json.RawMessage `json:"args_schema,omitempty"`
	// ResultSchema is a JSON Schema of the data the op returns; kitsoki
	// validate checks the story's bind: sources against its properties:
	// a field it does not list is an error when the schema says
	// "additionalProperties": false, else a warning.
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
}

// HostDescribeResult is the answer to host.describe.
type HostDescribeResult struct {
	Ops []HostOpInfo `json:"ops"`
}

// HostFunc answers one op. Return the data to bind, or an error: a *Error
// keeps its code, any other error is sent with CodeAgentError. Either way
// kitsoki records the failure and the invoke's on_error fires.
type HostFunc func(ctx context.Context, req *HostInvokeRequest) (map[string]any, error)

// HostOp is one op a host plugin serves.
type HostOp struct {
	Description string
	// ArgsSchema, when set, is reported by host.describe (a JSON Schema
	// object). ServeHost does not validate args against it itself.
	ArgsSchema json.RawMessage
	// ResultSchema, when set, is reported by host.describe: a JSON Schema
	// object of the data Run returns (its properties, and
	// "additionalProperties": false when they are all).
	ResultSchema json.RawMessage
	Run          HostFunc
}

// ServeHost answers kitsoki's host.invoke and host.describe calls on
// stdin/stdout with ops, keyed by op name ("" answers an invoke of the
// handler's own name), until stdin closes or the process gets SIGTERM or
// SIGINT. Like Serve, write diagnostics to stderr only.
func ServeHost(ops map[string]HostOp) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	in, out := stdio()
	return ServeHostConn(ctx, in, out, ops)
}

// ServeHostConn is ServeHost over any reader and writer, with ServeConn's
// rules for ending, concurrency and bad request lines.
func ServeHostConn(ctx context.Context, r io.Reader, w io.Writer, ops map[string]HostOp) error {
	return serveConn(ctx, r, w, nil, ops)
}

// prepareHost decodes a host.invoke request's params and registers the
// call as cancellable under its id. It runs on the reading goroutine.
func (s *stdioServer) prepareHost(ctx context.Context, req *request, line []byte) {
	req.host = cancellable[HostInvokeRequest](ctx, s, req, line)
}

// hostInvoke runs one host.invoke call; a panicking op becomes an error
// response.
func (s *stdioServer) hostInvoke(req *request) (res *HostInvokeResult, err error) {
	switch {
	case req.paramsErr != nil:
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("%s: params are not a HostInvokeRequest: %v", MethodHostInvoke, req.paramsErr)}
	case req.host == nil:
		return nil, &Error{Code: CodeInvalidParams, Message: MethodHostInvoke + ": params are missing (want a HostInvokeRequest object)"}
	}
	op, ok := s.hostOps[req.host.Op]
	if !ok || op.Run == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("%s: unknown op %q (this plugin answers: %s)",
			req.host.Handler, req.host.Op, strings.Join(s.opNames(), ", "))}
	}
	defer func() {
		if p := recover(); p != nil {
			log.Printf("kitsoki plugin: host op %q panicked: %v\n%s", req.host.Op, p, debug.Stack())
			res, err = nil, &Error{Code: CodeAgentError, Message: fmt.Sprintf("host op %q panicked: %v", req.host.Op, p)}
		}
	}()
	data, err := op.Run(req.toolCtx, req.host)
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = map[string]any{}
	}
	return &HostInvokeResult{Data: data}, nil
}

// hostDescribe answers host.describe: the ops, sorted by name.
func (s *stdioServer) hostDescribe() *HostDescribeResult {
	res := &HostDescribeResult{Ops: []HostOpInfo{}}
	for _, name := range s.opNames() {
		op := s.hostOps[name]
		res.Ops = append(res.Ops, HostOpInfo{Name: name, Description: op.Description, ArgsSchema: op.ArgsSchema, ResultSchema: op.ResultSchema})
	}
	return res
}

func (s *stdioServer) opNames() []string {
	names := make([]string, 0, len(s.hostOps))
	for n := range s.hostOps {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
