package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/sourcegraph/jsonrpc2"
)

// Serve answers kitsoki's agent calls on stdin/stdout until stdin closes or
// the process gets SIGTERM or SIGINT, which cancel the calls in flight. It
// returns nil on such an orderly end. Write diagnostics to stderr, never to
// stdout: kitsoki logs the plugin's stderr line by line, and any stdout line
// that is not a JSON-RPC response ends the connection.
func Serve(a Agent) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return ServeConn(ctx, os.Stdin, os.Stdout, a)
}

// ServeConn is Serve over any reader and writer (tests use pipes). It
// returns when r reaches EOF (nil), when reading fails (the error), or when
// ctx ends (nil; if r is an io.Closer it is closed to stop the reader).
//
// Requests are answered concurrently and may be answered out of order;
// kitsoki matches responses by id. A request line that is too long, not
// UTF-8 or not JSON gets a parse error response with a null id and serving
// goes on.
func ServeConn(ctx context.Context, r io.Reader, w io.Writer, a Agent) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var closer io.Closer
	if c, ok := r.(io.Closer); ok {
		closer = c
	}
	s := &stdioServer{agent: a}
	stream := NewLineStream(r, w, closer)
	stream.OnBadMessage = func(err error) {
		log.Printf("kitsoki plugin: refused a request: %v", err)
		s.replyRaw(stream, nullIDError(CodeParseError, err.Error()))
	}
	s.stream = stream
	conn := jsonrpc2.NewConn(ctx, &recordingStream{LineStream: stream, s: s},
		jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(s.handle)),
		jsonrpc2.SetLogger(log.New(os.Stderr, "kitsoki plugin: ", 0)))
	select {
	case <-ctx.Done():
		conn.Close()
		return nil
	case <-conn.DisconnectNotify():
	}
	err := s.readErr()
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return fmt.Errorf("kitsoki plugin: read request: %w", err)
}

type stdioServer struct {
	agent  Agent
	stream *LineStream

	mu  sync.Mutex
	err error
}

// recordingStream keeps the error that ended the connection: jsonrpc2 only
// logs it.
type recordingStream struct {
	*LineStream
	s *stdioServer
}

func (r *recordingStream) ReadObject(v any) error {
	err := r.LineStream.ReadObject(v)
	if err != nil {
		r.s.mu.Lock()
		if r.s.err == nil {
			r.s.err = err
		}
		r.s.mu.Unlock()
	}
	return err
}

func (s *stdioServer) readErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stdioServer) replyRaw(stream *LineStream, msg []byte) {
	if err := stream.WriteLine(msg); err != nil {
		log.Printf("kitsoki plugin: write error response: %v", err)
	}
}

func nullIDError(code int64, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *int           `json:"id"`
		Error   jsonrpc2.Error `json:"error"`
	}{"2.0", nil, jsonrpc2.Error{Code: code, Message: msg}})
	return b
}

// handle answers one request. Notifications (no id) are ignored: the
// protocol has none.
func (s *stdioServer) handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Notif {
		return nil, nil
	}
	if req.Method != MethodAsk {
		return nil, &jsonrpc2.Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found (this plugin answers %s)", req.Method, MethodAsk)}
	}
	var ask AskRequest
	if req.Params == nil {
		return nil, &jsonrpc2.Error{Code: CodeInvalidParams, Message: "agent.ask: params are missing (want an AskRequest object)"}
	}
	if err := json.Unmarshal(*req.Params, &ask); err != nil {
		return nil, &jsonrpc2.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("agent.ask: params are not an AskRequest: %v", err)}
	}
	resp, err := s.agent.Ask(ctx, &ask)
	if err != nil {
		return nil, rpcError(err)
	}
	if resp == nil {
		resp = &AskResponse{}
	}
	return resp, nil
}

// rpcError turns an error returned by Agent.Ask into a JSON-RPC error.
func rpcError(err error) *jsonrpc2.Error {
	var pe *Error
	if errors.As(err, &pe) {
		e := &jsonrpc2.Error{Code: pe.Code, Message: pe.Message}
		if pe.Data != nil {
			e.SetError(pe.Data)
		}
		return e
	}
	return &jsonrpc2.Error{Code: CodeAgentError, Message: err.Error()}
}
