// Package mcphttp is the mcp_http agent transport: a conformant MCP client
// (mark3labs/mcp-go over Streamable HTTP) that answers each Ask with a
// tools/call of the declared tool (default "ask") whose arguments are the
// AskRequest (wire-protocols.md §5). mcp-go's client connects, negotiates,
// keeps the session and sends every request; kitsoki adds the declared
// headers, bounds response bodies and words the errors (roundtrip.go).
//
// One client per agent, which is one per kitsoki session: connected on the
// first Ask, closed by Close. It speaks both protocol generations: the
// stateless 2026-07-28 core mcp-go prefers, and the session-based revisions
// (initialize, Mcp-Session-Id) before it, re-initializing once when a
// session expires. A server written for Kitsoki's single POST, which has
// no initialize, is still served in that mode.
package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/plugin"
)

// Agent is an mcp_http plugin. It is safe for concurrent use.
type Agent struct {
	decl    agent.Declaration
	tool    string
	logger  *slog.Logger
	rt      *roundTripper
	httpc   *http.Client
	secrets []string

	mu     sync.Mutex // guards conn, closed; serializes (re)connecting
	conn   *connection
	closed bool
}

// connection is one MCP client and how it talks to the server.
type connection struct {
	client *client.Client
	tr     *transport.StreamableHTTP
	single bool // Kitsoki's single-POST mode: no initialize, no session
}

// Option adjusts an Agent.
type Option func(*Agent)

// WithLogger sets the logger for connection events.
func WithLogger(l *slog.Logger) Option { return func(a *Agent) { a.logger = l } }

// WithHTTPTransport replaces the HTTP transport (tests, proxies).
func WithHTTPTransport(rt http.RoundTripper) Option { return func(a *Agent) { a.rt.base = rt } }

// Build is the registry's builder for plugin: mcp_http. It never connects.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return New(decl, WithLogger(env.Logger))
}

// New returns an agent for decl; nothing is sent until the first Ask.
func New(decl agent.Declaration, opts ...Option) (*Agent, error) {
	if decl.Endpoint == "" {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return nil, fmt.Errorf("agent_plugins.%s: mcp_http plugin requires endpoint:", decl.Alias)
	}
	if u, err := url.Parse(decl.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("agent_plugins.%s: endpoint %q is not an http(s) URL", decl.Alias, decl.Endpoint)
	}
	a := &Agent{
		decl: decl,
		tool: decl.Tool,
		rt:   &roundTripper{base: http.DefaultTransport.(*http.Transport).Clone(), headers: decl.Headers},
	}
	if a.tool == "" {
		a.tool = plugin.DefaultTool
	}
	for _, v := range decl.Headers {
		a.secrets = append(a.secrets, v)
	}
	a.secrets = append(a.secrets, decl.Secrets...)
	for _, o := range opts {
		o(a)
	}
	if a.logger == nil {
		a.logger = slog.Default()
	}
	a.logger = a.logger.With("transport", agent.PluginMCPHTTP)
	a.httpc = &http.Client{Transport: a.rt}
	return a, nil
}

// Ask calls the tool with the call's request as its arguments and decodes
// the answer.
func (a *Agent) Ask(ctx context.Context, ac *agent.Call) (*agent.AskResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, a.ctxError(err)
	}
	args, err := json.Marshal(ac.Request)
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "mcp_http agent: encode request: %w", err)
	}
	c, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}

	var call mcp.CallToolRequest
	call.Params.Name = a.tool
	call.Params.Arguments = json.RawMessage(args)

	session := c.tr.GetSessionId()
	rec := &recorder{}
	res, err := c.client.CallTool(withRecorder(ctx, rec), call)
	if err != nil && errors.Is(err, transport.ErrSessionTerminated) && session != "" && ctx.Err() == nil {
		// The server forgot the session: the 404 (or the refusal to
		// send on a session already known to be over) means the call
		// never reached the tool, so it is safe to send it once more.
		if rerr := a.reinitialize(ctx, c, session); rerr != nil {
			return nil, rerr
		}
		rec = &recorder{}
		res, err = c.client.CallTool(withRecorder(ctx, rec), call)
	}
	if err != nil {
		return nil, a.callError(ctx, "", err, rec)
	}
	return a.decode(res)
}

// connect returns the live connection, opening it on first use.
func (a *Agent) connect(ctx context.Context) (*connection, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, agent.Errorf(agent.KindTransportError, "mcp_http agent: agent is closed")
	}
	if a.conn != nil {
		return a.conn, nil
	}
	c, err := a.newConnection(false)
	if err != nil {
		return nil, err
	}
	rec := &recorder{}
	_, err = c.client.Initialize(withRecorder(ctx, rec), a.initRequest(""))
	if err == nil {
		a.logger.Debug("mcp_http connected", "endpoint", a.decl.Endpoint,
			"protocol", c.client.ProtocolVersion(), "session", c.tr.GetSessionId() != "")
		a.conn = c
		return c, nil
	}
	c.client.Close()
	if ctx.Err() != nil {
		return nil, a.ctxError(ctx.Err())
	}
	got := rec.snapshot()
	if fallsBack(got, err) {
		// No initialize: a server written for Kitsoki's single POST.
		a.logger.Info("mcp_http server does not implement initialize; using single-POST mode",
			"endpoint", a.decl.Endpoint, "initialize_error", a.redact(err.Error()))
		single, err := a.newConnection(true)
		if err != nil {
			return nil, err
		}
		a.conn = single
		return single, nil
	}
	return nil, a.callError(ctx, "initialize: ", err, rec)
}

// fallsBack reports whether a failed initialize means the server has no
// initialize (a JSON-RPC error or a 4xx), rather than a failure to report:
// 401 and 403 are about credentials, and falling back would only hide the
// real problem behind the same refusal of tools/call.
func fallsBack(got observed, err error) bool {
	if got.status == http.StatusUnauthorized || got.status == http.StatusForbidden {
		return false
	}
	return got.rpcErr != nil || (got.status >= 400 && got.status < 500) || errors.Is(err, transport.ErrLegacySSEServer)
}

func (a *Agent) newConnection(single bool) (*connection, error) {
	a.rt.assumeJSON.Store(single)
	tr, err := transport.NewStreamableHTTP(a.decl.Endpoint,
		transport.WithHTTPBasicClient(a.httpc), transport.WithHTTPLogger(a.logger))
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "mcp_http agent: %w", err)
	}
	var opts []client.ClientOption
	if single {
		opts = append(opts, client.WithSession()) // no handshake to wait for
	}
	c := client.NewClient(recordingTransport{tr}, opts...)
	if err := c.Start(context.Background()); err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "mcp_http agent: start client: %w", err)
	}
	return &connection{client: c, tr: tr, single: single}, nil
}

func (a *Agent) initRequest(protocol string) mcp.InitializeRequest {
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = protocol
	req.Params.ClientInfo = mcp.Implementation{Name: "kitsoki", Version: version.String()}
	return req
}

// reinitialize starts a new session after the server dropped old. If
// another call already did, it does nothing.
func (a *Agent) reinitialize(ctx context.Context, c *connection, old string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := c.tr.GetSessionId(); cur != "" && cur != old {
		return nil
	}
	a.logger.Info("mcp_http session expired; initializing a new one", "endpoint", a.decl.Endpoint)
	rec := &recorder{}
	if _, err := c.client.Initialize(withRecorder(ctx, rec), a.initRequest(c.client.ProtocolVersion())); err != nil {
		return a.callError(ctx, "re-initialize after session expiry: ", err, rec)
	}
	return nil
}

// callError classifies a failed request: deadline, refused body, HTTP
// status, JSON-RPC error, network error, in that order.
func (a *Agent) callError(ctx context.Context, prefix string, err error, rec *recorder) error {
	if ctx.Err() != nil {
		return a.ctxError(ctx.Err())
	}
	got := rec.snapshot()
	var detail string
	var urlErr *url.Error
	var syntaxErr *json.SyntaxError
	switch {
	case got.bodyErr != nil:
		detail = "response refused: " + got.bodyErr.Error()
	case got.status >= 400:
		detail = fmt.Sprintf("http %d: %s", got.status, agent.Clip(bytes.TrimSpace(got.body)))
	case got.rpcErr != nil:
		detail = fmt.Sprintf("rpc error %d: %s", got.rpcErr.Code, agent.Clip([]byte(got.rpcErr.Message)))
	case got.neither:
		detail = "response has neither result nor error"
	case got.sseEnded:
		detail = "SSE stream ended without a response"
	case errors.As(err, &urlErr):
		detail = "http do: " + urlErr.Error()
	case errors.As(err, &syntaxErr):
		detail = "unmarshal rpc response: " + syntaxErr.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		detail = "unmarshal rpc response: " + io.ErrUnexpectedEOF.Error()
	default:
		detail = err.Error()
	}
	return &agent.AskError{Kind: agent.KindTransportError, Detail: a.redact("mcp_http agent: " + prefix + detail), Err: err}
}

func (a *Agent) ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return agent.Errorf(agent.KindDeadlineExceeded, "mcp_http agent: request timed out: %w", err)
	}
	return agent.Errorf(agent.KindDeadlineExceeded, "mcp_http agent: request cancelled: %w", err)
}

// decode takes the answer from structuredContent when it is an object,
// else from the first text item.
func (a *Agent) decode(res *mcp.CallToolResult) (*agent.AskResponse, error) {
	text, hasText := firstText(res)
	if res.IsError {
		return nil, a.fail("tool returned isError=true: %s", agent.Clip([]byte(text)))
	}
	var resp agent.AskResponse
	if sc := bytes.TrimSpace(res.RawStructuredContent); len(sc) > 0 && sc[0] == '{' {
		if err := json.Unmarshal(sc, &resp); err != nil {
			return nil, a.fail("unmarshal AskResponse from structuredContent: %v", err)
		}
		return &resp, nil
	}
	if !hasText {
		return nil, a.fail("response content has no text item")
	}
	if err := json.Unmarshal([]byte(text), &resp); err != nil {
		return nil, a.fail("unmarshal AskResponse from content text: %v (text: %q)", err, agent.Clip([]byte(text)))
	}
	return &resp, nil
}

func (a *Agent) fail(format string, args ...any) error {
	return &agent.AskError{Kind: agent.KindTransportError, Detail: a.redact("mcp_http agent: " + fmt.Sprintf(format, args...))}
}

func firstText(res *mcp.CallToolResult) (string, bool) {
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			return t.Text, true
		}
	}
	return "", false
}

// redact hides header values and other declared secrets a server might
// echo back in an error body.
func (a *Agent) redact(s string) string {
	return secret.New(a.secrets).Text(s)
}

// Close ends the session (a DELETE for session-based servers, best effort)
// and drops idle connections. It is idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	c := a.conn
	a.conn = nil
	a.mu.Unlock()
	if c != nil {
		c.client.Close()
	}
	a.httpc.CloseIdleConnections()
	return nil
}
