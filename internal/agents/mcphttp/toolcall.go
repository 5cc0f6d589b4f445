package mcphttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/version"
)

// The tools/call of an Ask does not go through mcp-go's Client.CallTool,
// which (at the stateless revision) marshals the params, re-parses them
// into a map and marshals them again to add _meta, marshals them once more
// to derive the Mcp-* headers, parses the result twice, and watches each
// request's context on a goroutine of its own. mcp-go still owns the
// connection: initialize or server/discover, the negotiated revision, the
// session id and its end (a 404 is replayed through mcp-go's transport),
// and Close's DELETE. Kitsoki sends the tools/call POST itself: the
// envelope is built once around the already-encoded AskRequest (the
// stateless revision's _meta and the Mcp-Method/Mcp-Name headers are
// computed once per connection), and the reply is decoded once into typed
// structs, from a JSON body or an SSE stream.

// firstCallID is the JSON-RPC id of an agent's first tools/call. mcp-go
// numbers the requests it sends itself (initialize, server/discover) from 1
// on the same session; kitsoki's own ids start far above them so that no
// two requests of a session share an id.
const firstCallID = 1 << 30

// callShape is what every tools/call of one connection shares.
type callShape struct {
	protocol string      // the negotiated revision ("" in single-POST mode)
	prefix   []byte      // `{"name":<tool>,` then `"_meta":{...},` at the stateless revision, then `"arguments":`
	header   http.Header // MCP-Protocol-Version once negotiated, Mcp-Method and Mcp-Name at the stateless revision
	// versionHeader is header without the Mcp-Method/Mcp-Name of a
	// tools/call (for answers to server requests).
	versionHeader http.Header
}

// newCallShape encodes the parts of the params that do not change between
// calls, for the revision the connection negotiated.
func newCallShape(tool, protocol string) (*callShape, error) {
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	s := &callShape{protocol: protocol, header: http.Header{}, versionHeader: http.Header{}}
	if protocol != "" {
		s.header.Set(transport.HeaderKeyProtocolVersion, protocol)
		s.versionHeader.Set(transport.HeaderKeyProtocolVersion, protocol)
	}
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	b.Write(name)
	b.WriteByte(',')
	if mcp.IsModernProtocol(protocol) {
		// The stateless core carries the client's revision, identity and
		// capabilities in every request's _meta (as mcp-go's client would).
		meta, err := json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    protocol,
			mcp.MetaKeyClientCapabilities: mcp.ClientCapabilities{},
			mcp.MetaKeyClientInfo:         mcp.Implementation{Name: "kitsoki", Version: version.String()},
		})
		if err != nil {
			return nil, err
		}
		b.WriteString(`"_meta":`)
		b.Write(meta)
		b.WriteByte(',')
		std := mcp.StandardHeaders(protocol, mcp.MethodToolsCall, json.RawMessage(`{"name":`+string(name)+`}`))
		for k, v := range std {
			s.header.Set(k, v)
		}
	}
	b.WriteString(`"arguments":`)
	s.prefix = b.Bytes()
	return s, nil
}

// setShape encodes the envelope for the revision c negotiated ("" in
// single-POST mode, which negotiates nothing).
func (c *connection) setShape(tool string) error {
	protocol := ""
	if !c.single {
		protocol = c.client.ProtocolVersion()
	}
	s, err := newCallShape(tool, protocol)
	if err != nil {
		return agent.Errorf(agent.KindTransportError, "mcp_http agent: encode tools/call envelope: %w", err)
	}
	c.shape.Store(s)
	return nil
}

// params returns the tools/call params around args, an encoded AskRequest.
func (s *callShape) params(args []byte) json.RawMessage {
	p := make([]byte, 0, len(s.prefix)+len(args)+1)
	p = append(p, s.prefix...)
	p = append(p, args...)
	return append(p, '}')
}

// toolResult is the part of a CallToolResult kitsoki reads.
type toolResult struct {
	Content           *[]contentItem  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	ResultType        mcp.ResultType  `json:"resultType"`
}

// contentItem is one content item; its text stays encoded until it is
// needed (only when structuredContent is not an object).
type contentItem struct {
	Type string          `json:"type"`
	Text json.RawMessage `json:"text"`
}

// rpcReply is a JSON-RPC message of a tools/call response as kitsoki
// reads it: the response (result or error), or, in an SSE stream, a
// notification or a request of the server's.
type rpcReply struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Result *toolResult              `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// errInputRequired: the server asked for input kitsoki has no way to give
// (kitsoki's client offers no sampling, elicitation or roots).
var errInputRequired = errors.New("server asked for more input (resultType input_required); kitsoki offers no sampling, elicitation or roots to answer it")

// callTool sends one tools/call of args (an encoded AskRequest) on c and
// returns its parsed result. The POST is kitsoki's own, with the headers
// mcp-go's transport would send (session id, negotiated revision,
// Mcp-Method/Mcp-Name); a 404 on a session goes through mcp-go's
// transport once more, so that mcp-go learns the session is over and the
// caller can re-initialize.
func (a *Agent) callTool(ctx context.Context, c *connection, args []byte) (*toolResult, error) {
	shape := c.shape.Load()
	id := firstCallID + a.calls.Add(1) - 1
	body := make([]byte, 0, len(shape.prefix)+len(args)+64)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":"tools/call","params":`...)
	body = append(body, shape.prefix...)
	body = append(body, args...)
	body = append(body, "}}"...)

	session := ""
	if !mcp.IsModernProtocol(shape.protocol) {
		session = c.tr.GetSessionId()
	}
	resp, err := a.post(ctx, shape, session, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && session != "" {
		// mcp-go must see the refusal itself to end the session (the
		// call never reached the tool, so sending it again is safe).
		_, err := c.rt.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
			ID: mcp.NewRequestId(id), Method: string(mcp.MethodToolsCall), Params: json.RawMessage(shape.params(args)), Header: shape.header})
		if err == nil {
			err = transport.ErrSessionTerminated
		}
		return nil, transport.NewError(err)
	}
	if resp.StatusCode != http.StatusOK {
		// The recorder has the status and body for callError.
		return nil, fmt.Errorf("request failed with status %d", resp.StatusCode)
	}
	var reply *rpcReply
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		reply = &rpcReply{}
		if err := json.NewDecoder(resp.Body).Decode(reply); err != nil {
			return nil, fmt.Errorf("failed to decode response: %w", err)
		}
		if len(reply.ID) == 0 || string(reply.ID) == "null" {
			return nil, errors.New("response should contain RPC id")
		}
	case "text/event-stream":
		if reply, err = a.readStream(ctx, c, shape, resp.Body); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unexpected content type: %s", resp.Header.Get("Content-Type"))
	}
	if rec := recorderFrom(ctx); rec != nil && reply.Error == nil && reply.Result == nil {
		rec.mu.Lock()
		rec.neither = true
		rec.mu.Unlock()
	}
	switch {
	case reply.Error != nil:
		if rec := recorderFrom(ctx); rec != nil {
			rec.mu.Lock()
			rec.rpcErr = reply.Error
			rec.mu.Unlock()
		}
		return nil, reply.Error.AsError()
	case reply.Result == nil:
		return nil, errors.New("response has neither result nor error")
	case reply.Result.ResultType == mcp.ResultTypeInputRequired:
		return nil, errInputRequired
	case reply.Result.Content == nil:
		return nil, errors.New("content is missing")
	}
	return reply.Result, nil
}

// post sends one JSON-RPC message to the endpoint.
func (a *Agent) post(ctx context.Context, shape *callShape, session string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.decl.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	for k, v := range shape.header {
		h[k] = v
	}
	h["Content-Type"] = jsonContentType
	h["Accept"] = acceptBoth
	if session != "" {
		h[transport.HeaderKeySessionID] = []string{session}
	}
	return a.httpc.Do(req)
}

var (
	jsonContentType = []string{"application/json"}
	acceptBoth      = []string{"application/json, text/event-stream"}
)

// readStream reads an SSE response to a tools/call up to the response.
// Notifications are dropped (kitsoki's client subscribes to none); a
// request of the server's is answered at once, ping with an empty result
// and anything else with method-not-found (kitsoki's client offers no
// sampling, elicitation or roots). A broken stream is not resumed: the
// call fails as a transport error.
func (a *Agent) readStream(ctx context.Context, c *connection, shape *callShape, body io.Reader) (*rpcReply, error) {
	br := bufio.NewReader(body)
	var data []byte
	dispatch := func() (*rpcReply, error) {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return nil, nil
		}
		var msg rpcReply
		if err := json.Unmarshal(data, &msg); err != nil {
			return nil, fmt.Errorf("failed to decode SSE message: %w", err)
		}
		hasID := len(msg.ID) > 0 && string(msg.ID) != "null"
		switch {
		case msg.Method == "":
			if !hasID {
				return nil, errors.New("response should contain RPC id")
			}
			return &msg, nil
		case hasID:
			a.answerServerRequest(ctx, c, shape, msg)
		}
		return nil, nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it whole.
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read SSE stream: %w", err)
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0:
			if msg, derr := dispatch(); msg != nil || derr != nil {
				return msg, derr
			}
		case bytes.HasPrefix(trimmed, []byte("data:")):
			v := bytes.TrimPrefix(trimmed[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err == io.EOF {
			if msg, derr := dispatch(); msg != nil || derr != nil {
				return msg, derr
			}
			return nil, errors.New("SSE stream ended without a response")
		}
	}
}

// answerServerRequest answers a request the server sent on a tools/call
// stream (best effort: the call goes on whatever becomes of the answer).
func (a *Agent) answerServerRequest(ctx context.Context, c *connection, shape *callShape, msg rpcReply) {
	var b []byte
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, msg.ID...)
	if msg.Method == string(mcp.MethodPing) {
		b = append(b, `,"result":{}}`...)
	} else {
		text, _ := json.Marshal("kitsoki's mcp_http client does not handle " + msg.Method)
		b = append(b, `,"error":{"code":-32601,"message":`...)
		b = append(b, text...)
		b = append(b, "}}"...)
	}
	session := ""
	if !mcp.IsModernProtocol(shape.protocol) {
		session = c.tr.GetSessionId()
	}
	resp, err := a.post(ctx, &callShape{protocol: shape.protocol, header: shape.versionHeader}, session, b)
	if err != nil {
		a.logger.Debug("mcp_http: answering a server request failed", "method", msg.Method, "error", a.redact(err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
