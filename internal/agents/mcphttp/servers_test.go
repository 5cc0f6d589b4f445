package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/plugin"
)

// rpcMessage is a JSON-RPC request or notification as a test server sees it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Name            string          `json:"name"`
		Arguments       json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// sessionServer is a hand-written MCP server of the session-based
// generation (2025-06-18 / 2025-11-25): initialize hands out an
// Mcp-Session-Id that every later request must carry (400 without it, 404
// for an unknown or expired one), with a matching MCP-Protocol-Version.
type sessionServer struct {
	t   testing.TB
	srv *httptest.Server
	sse bool // answer tools/call as an SSE stream

	mu          sync.Mutex
	sessions    map[string]string // id -> negotiated version
	next        int
	initialized int
	toolCalls   int // calls that reached the tool
	deletes     []string
	expireEach  bool // every tools/call finds its session expired
	auth        []string
	problems    []string
}

func newSessionServer(t testing.TB) *sessionServer {
	s := &sessionServer{t: t, sessions: map[string]string{}}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sessionServer) URL() string { return s.srv.URL + "/mcp" }

func (s *sessionServer) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = map[string]string{}
}

func (s *sessionServer) snapshot() sessionServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sessionServer{initialized: s.initialized, toolCalls: s.toolCalls,
		deletes: append([]string(nil), s.deletes...), auth: append([]string(nil), s.auth...),
		problems: append([]string(nil), s.problems...)}
}

func (s *sessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auth = append(s.auth, r.Method+" "+r.Header.Get("Authorization"))
	s.mu.Unlock()
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method == http.MethodDelete {
		s.mu.Lock()
		s.deletes = append(s.deletes, id)
		delete(s.sessions, id)
		s.mu.Unlock()
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var msg rpcMessage
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if msg.Method == "initialize" {
		version := msg.Params.ProtocolVersion
		if version != "2025-06-18" && version != "2025-11-25" {
			version = "2025-06-18"
		}
		s.mu.Lock()
		s.next++
		sid := "session-" + strconv.Itoa(s.next)
		s.sessions[sid] = version
		s.initialized++
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		writeJSON(w, msg.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`, version))
		return
	}
	if id == "" {
		http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	version, ok := s.sessions[id]
	if ok && msg.Method == "tools/call" && s.expireEach {
		delete(s.sessions, id)
		ok = false
	}
	if ok && r.Header.Get("Mcp-Protocol-Version") != version {
		s.problems = append(s.problems, fmt.Sprintf("%s sent MCP-Protocol-Version %q, want %q", msg.Method, r.Header.Get("Mcp-Protocol-Version"), version))
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch msg.Method {
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/call":
		s.mu.Lock()
		s.toolCalls++
		s.mu.Unlock()
		result := callEcho(s.t, msg)
		if s.sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", msg.ID, result)
			return
		}
		writeJSON(w, msg.ID, result)
	default:
		writeRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID))
	}
}

// callEcho runs the echo agent on a tools/call and returns the result
// object an MCP server would send.
func callEcho(t testing.TB, msg rpcMessage) string {
	var req plugin.AskRequest
	if err := json.Unmarshal(msg.Params.Arguments, &req); err != nil {
		t.Errorf("tools/call arguments are not an AskRequest: %v", err)
	}
	resp, err := echo.Agent{}.Ask(context.Background(), &req)
	if err != nil {
		b, _ := json.Marshal(err.Error())
		return fmt.Sprintf(`{"content":[{"type":"text","text":%s}],"isError":true}`, b)
	}
	b, _ := json.Marshal(resp)
	text, _ := json.Marshal(string(b))
	return fmt.Sprintf(`{"content":[{"type":"text","text":%s}],"structuredContent":%s}`, text, b)
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func writeRaw(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

// cannedServer answers discover with method-not-found, initialize without
// a session, and every tools/call with whatever answer returns.
type cannedServer struct {
	srv    *httptest.Server
	answer func(w http.ResponseWriter, r *http.Request, msg rpcMessage)
}

func newCannedServer(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, msg rpcMessage)) *cannedServer {
	s := &cannedServer{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg rpcMessage
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		switch msg.Method {
		case "initialize":
			writeJSON(w, msg.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}`)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/call":
			s.answer(w, r, msg)
		default:
			writeRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID))
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *cannedServer) URL() string { return s.srv.URL + "/mcp" }

// kitsokiServer is a server written for Kitsoki's single POST: it knows
// tools/call only and answers everything else as initFailure says.
type kitsokiServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	bodies []rpcMessage
}

func newKitsokiServer(t testing.TB, initFailure func(w http.ResponseWriter, msg rpcMessage)) *kitsokiServer {
	s := &kitsokiServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg rpcMessage
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, msg)
		s.mu.Unlock()
		if msg.Method != "tools/call" {
			initFailure(w, msg)
			return
		}
		// No Content-Type: Go's server sniffs text/plain.
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, callEcho(t, msg))
	}))
	t.Cleanup(s.srv.Close)
	return s
}
