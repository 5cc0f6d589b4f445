package plugin

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/base/loopback"
	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
)

// fastCalls answers the tools/call requests of the served tool itself,
// decoding each request once (envelope and AskRequest in one pass) and
// writing the result without mcp-go's per-request session, context and
// re-encoding work. Everything else (initialize, server/discover,
// notifications, DELETE, GET, other tools, and any tools/call that is not
// plainly valid) goes to mcp-go's StreamableHTTPServer, next, with the
// body Guard buffered, so mcp-go still owns negotiation, sessions and every
// error answer. The bytes written are the ones mcp-go would write
// (TestFastToolCallMatchesMCPGo compares them).
type fastCalls struct {
	next     http.Handler
	agent    Agent
	tool     string
	path     string
	sessions *mcpguard.Sessions
	// serverMeta is the result's _meta at the stateless revision: the
	// server's identity, as mcp-go adds it.
	serverMeta []byte
}

func newFastCalls(next http.Handler, a Agent, cfg mcpConfig, sessions *mcpguard.Sessions) *fastCalls {
	info, _ := json.Marshal(map[string]mcp.Implementation{
		mcp.MetaKeyServerInfo: {Name: cfg.name, Version: cfg.version},
	})
	return &fastCalls{next: next, agent: a, tool: cfg.tool, path: "/" + strings.Trim(cfg.path, "/"),
		sessions: sessions, serverMeta: info}
}

// fastMessage is a tools/call request as the fast path reads it.
type fastMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string           `json:"name"`
		Arguments *AskRequest      `json:"arguments"`
		Meta      *fastMeta        `json:"_meta"`
		Task      *json.RawMessage `json:"task"`
		// Multi round-trip continuations go to mcp-go.
		InputResponses *json.RawMessage `json:"inputResponses"`
		RequestState   *json.RawMessage `json:"requestState"`
	} `json:"params"`
}

type fastMeta struct {
	ProtocolVersion *string `json:"io.modelcontextprotocol/protocolVersion"`
}

func (f *fastCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != f.path || !loopbackSafe(r) {
		f.next.ServeHTTP(w, r)
		return
	}
	body, ok := mcpguard.Body(r)
	if !ok {
		f.next.ServeHTTP(w, r)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		f.next.ServeHTTP(w, r)
		return
	}
	var msg fastMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		// mcp-go words the error (or binds the arguments its own way).
		f.next.ServeHTTP(w, r)
		return
	}
	modern, ok := f.accept(r, &msg)
	if !ok {
		f.next.ServeHTTP(w, r)
		return
	}
	req := msg.Params.Arguments
	if req == nil {
		req = &AskRequest{}
	}
	f.answer(r.Context(), w, msg.ID, modern, req)
}

// accept reports whether msg is a tools/call of the served tool that
// mcp-go would take as it is, and at which revision: anything else is
// left to mcp-go, which answers it (or refuses it) in its own words.
func (f *fastCalls) accept(r *http.Request, msg *fastMessage) (modern, ok bool) {
	p := &msg.Params
	if msg.JSONRPC != mcp.JSONRPC_VERSION || msg.Method != string(mcp.MethodToolsCall) || p.Name != f.tool ||
		!plainID(msg.ID) || p.Task != nil || p.InputResponses != nil || p.RequestState != nil {
		return false, false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false, false
		}
	}
	header := r.Header.Get(mcp.HeaderProtocolVersion)
	meta := ""
	if p.Meta != nil && p.Meta.ProtocolVersion != nil {
		meta = *p.Meta.ProtocolVersion
	}
	if mcp.IsModernProtocol(header) || mcp.IsModernProtocol(meta) {
		// The stateless core: the revision in header and _meta, equal and
		// known; Mcp-Method and Mcp-Name naming this call; no resumption.
		name, nameOK := mcp.DecodeHeaderValue(r.Header.Get(mcp.HeaderName))
		return true, header == meta && mcp.IsValidProtocolVersion(meta) &&
			r.Header.Get(mcp.HeaderLastEventID) == "" &&
			r.Header.Get(mcp.HeaderMethod) == msg.Method && nameOK && name == p.Name
	}
	// A session-based revision: a live session, a known (or no) version
	// header, and no _meta revision to reconcile.
	id := r.Header.Get(mcpguard.SessionHeader)
	return false, p.Meta == nil && id != "" && f.sessions.Known(id) &&
		(header == "" || mcp.IsValidProtocolVersion(header))
}

// plainID reports whether id is an integer or a string mcp-go writes back
// byte for byte, so that the fast path can echo it as it came.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	if id[0] == '"' {
		if len(id) < 2 || id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
				return false
			}
		}
		return true
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// loopbackSafe reports whether mcp-go's DNS-rebinding check would let r
// through: a server bound to loopback serves only loopback Host names
// (loopback.Check, which also refuses a foreign Origin). When unsure it
// says no, and mcp-go decides.
func loopbackSafe(r *http.Request) bool { return loopback.Check(r) == nil }

// answer runs the agent and writes the tools/call response.
func (f *fastCalls) answer(ctx context.Context, w http.ResponseWriter, id json.RawMessage, modern bool, req *AskRequest) {
	text, structured, isError := toolResult(ctx, f.agent, req)
	quoted, _ := json.Marshal(text) // the text item, escaped as mcp-go's encoder does
	b := make([]byte, 0, 96+len(id)+len(f.serverMeta)+len(quoted)+len(structured))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{`...)
	if modern {
		b = append(b, `"_meta":`...)
		b = append(b, f.serverMeta...)
		b = append(b, ',')
	}
	b = append(b, `"content":[{"type":"text","text":`...)
	b = append(b, quoted...)
	b = append(b, "}]"...)
	if isError {
		b = append(b, `,"isError":true`...)
	}
	if modern {
		b = append(b, `,"resultType":"complete"`...)
	}
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	b = append(b, "}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
