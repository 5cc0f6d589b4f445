package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/version"
)

// The tools/call of an Ask does not go through mcp-go's Client.CallTool,
// which (at the stateless revision) marshals the params, re-parses them
// into a map and marshals them again to add _meta, marshals them once more
// to derive the Mcp-* headers, and parses the result twice. mcp-go still
// owns the connection: initialize or server/discover, the session id, the
// negotiated revision and its headers, SSE responses, requests the server
// sends on the stream and the session's end. What kitsoki does itself is
// what is the same on every call: the params envelope around the
// already-encoded AskRequest (with the stateless revision's _meta, encoded
// once per connection), the Mcp-Method/Mcp-Name headers (computed once),
// and one decode of the result into typed structs.

// firstCallID is the JSON-RPC id of an agent's first tools/call. mcp-go
// numbers the requests it sends itself (initialize, server/discover) from 1
// on the same session; kitsoki's own ids start far above them so that no
// two requests of a session share an id.
const firstCallID = 1 << 30

// callShape is what every tools/call of one connection shares.
type callShape struct {
	prefix []byte      // `{"name":<tool>,` then `"_meta":{...},` at the stateless revision, then `"arguments":`
	header http.Header // Mcp-Method and Mcp-Name at the stateless revision; nil before it
}

// newCallShape encodes the parts of the params that do not change between
// calls, for the revision the connection negotiated.
func newCallShape(tool, protocol string) (*callShape, error) {
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	s := &callShape{}
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
		s.header = make(http.Header, len(std))
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

type contentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errInputRequired: the server asked for input kitsoki has no way to give
// (kitsoki's client offers no sampling, elicitation or roots).
var errInputRequired = errors.New("server asked for more input (resultType input_required); kitsoki offers no sampling, elicitation or roots to answer it")

// callTool sends one tools/call of args (an encoded AskRequest) on c and
// returns its parsed result.
func (a *Agent) callTool(ctx context.Context, c *connection, args []byte) (*toolResult, error) {
	shape := c.shape.Load()
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(firstCallID + a.calls.Add(1) - 1),
		Method:  string(mcp.MethodToolsCall),
		Params:  shape.params(args),
		Header:  shape.header,
	}
	resp, err := c.rt.SendRequest(ctx, req)
	if err != nil {
		return nil, transport.NewError(err)
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	var res toolResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal response: %w", err)
	}
	if res.ResultType == mcp.ResultTypeInputRequired {
		return nil, errInputRequired
	}
	if res.Content == nil {
		return nil, errors.New("content is missing")
	}
	return &res, nil
}
