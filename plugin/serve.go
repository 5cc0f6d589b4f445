package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// Serve answers kitsoki's agent calls on stdin/stdout until stdin closes or
// the process gets SIGTERM or SIGINT, which cancel the calls in flight. It
// returns nil on such an orderly end. Write diagnostics to stderr, never to
// stdout: kitsoki logs the plugin's stderr line by line, and any stdout line
// that is not a JSON-RPC response ends the connection.
func Serve(a Agent) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	in, out := stdio()
	return ServeConn(ctx, in, out, a)
}

// ServeConn is Serve over any reader and writer (tests use pipes). It
// returns when r reaches EOF, once the calls in flight are answered (nil);
// when reading fails (the error); or when ctx ends (nil; if r is an
// io.Closer it is closed to stop the reader).
//
// Requests are answered concurrently, each as soon as it is ready, so
// answers may leave out of order; kitsoki matches them by id. A request
// line that is too long, not UTF-8 or not JSON gets a parse error response
// with a null id, and serving goes on.
//
// The loop is written against the wire directly rather than with a
// general JSON-RPC connection: decoding each request once, into its final
// types, keeps a call's overhead in the tens of microseconds.
func ServeConn(ctx context.Context, r io.Reader, w io.Writer, a Agent) error {
	return serveConn(ctx, r, w, a, nil)
}

// serveConn serves an agent (a) or a host plugin's ops (hostOps non-nil).
func serveConn(ctx context.Context, r io.Reader, w io.Writer, a Agent, hostOps map[string]HostOp) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var closer io.Closer
	if c, ok := r.(io.Closer); ok {
		closer = c
	}
	s := &stdioServer{agent: a, hostOps: hostOps, stream: NewLineStream(r, w, closer), ctx: ctx}
	s.watch = time.AfterFunc(time.Hour, s.watched)
	s.watch.Stop()
	defer s.watch.Stop()
	s.stream.OnBadMessage = s.refuse // turns on skipping over-long lines
	s.done = make(chan error, 1)
	s.reader = true
	s.wg.Add(1)
	go s.worker()
	select {
	case err := <-s.done:
		s.wg.Wait()
		return err
	case <-ctx.Done():
		s.stream.Close()
		return nil
	}
}

// readAhead is how long a worker may answer a call before another worker
// starts reading the next line: during a longer call the next line
// (another call, a $/cancelRequest) is read and answered concurrently.
//
// A call answered sooner costs no timer and wakes no other thread (on a
// shared machine each wake-up costs more than a quick answer): one timer
// per connection watches the answering workers, armed when a worker stops
// reading to answer and not already armed, and looks at most once per
// readAhead while calls come back to back (readAheadDue).
const readAhead = time.Millisecond

type stdioServer struct {
	agent  Agent
	stream *LineStream
	ctx    context.Context // the serving context, for workers started later
	wg     sync.WaitGroup  // running workers

	hostOps map[string]HostOp // a host plugin's ops; nil when serving an agent

	readMu sync.Mutex // one worker reads at a time

	mu        sync.Mutex  // guards the fields below
	reader    bool        // a worker reads, or is about to
	answering int         // workers between reading a request and replying to it
	since     time.Time   // when the reader last stopped reading to answer
	watching  bool        // watch is armed
	watch     *time.Timer // starts a reader once a call outlasts readAhead

	doneOnce sync.Once
	done     chan error // why reading stopped

	callsMu sync.Mutex
	calls   map[string]context.CancelFunc // cancellable calls in flight, by raw id
}

// worker reads one request and answers it on its own goroutine, so the
// answer never waits for another thread; then it reads again, unless
// another worker became the reader meanwhile (the call took longer than
// readAhead), in which case it ends. One worker reads at a time; calls
// still run concurrently, each on the worker that read it.
func (s *stdioServer) worker() {
	defer s.wg.Done()
	for {
		req, ok := s.read(s.ctx)
		s.mu.Lock()
		s.reader = false
		if ok {
			s.answering++
			s.since = time.Now()
			if !s.watching {
				s.watching = true
				s.watch.Reset(readAhead)
			}
		}
		s.mu.Unlock()
		if !ok {
			return
		}
		resp, err := s.call(s.ctx, req)
		s.reply(req.ID, resp, err)
		s.settle(req)
		if !s.answered() {
			return
		}
	}
}

// answered ends a worker's call and makes it the reader unless a worker
// already is.
func (s *stdioServer) answered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answering--
	if s.reader {
		return false
	}
	s.reader = true
	return true
}

// watched is the watch timer's function: it starts a worker to read the
// next request once nobody has read for readAhead while a call is being
// answered, and otherwise looks again when that could be the case.
func (s *stdioServer) watched() {
	s.mu.Lock()
	defer s.mu.Unlock()
	start, wait := readAheadDue(s.reader, s.answering, s.since, time.Now())
	switch {
	case start:
		s.watching = false
		s.reader = true
		s.wg.Add(1) // a worker answering is still counted: see answered
		go s.worker()
	case wait > 0:
		s.watch.Reset(wait)
	default:
		s.watching = false
	}
}

// readAheadDue decides for watched: start a reader now, look again in
// wait, or (neither) stop watching until a worker next stops reading. A
// reader is due when no worker reads, one answers, and the reader stopped
// reading readAhead ago or more.
func readAheadDue(reader bool, answering int, since, now time.Time) (start bool, wait time.Duration) {
	if reader || answering == 0 {
		return false, 0
	}
	return clock.Due(readAhead, since, now)
}

// read returns the next request, answering bad lines on the way; false
// once the input is over (the reason is on s.done). A $/cancelRequest
// notification cancels its call here, and a cancellable call is
// registered before the next line is read, so a cancellation can never
// overtake the call it names.
func (s *stdioServer) read(ctx context.Context) (*request, bool) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	for {
		line, err := s.stream.ReadLine()
		var fe *FrameError
		switch {
		case errors.As(err, &fe):
			s.refuse(err)
			continue
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed), errors.Is(err, io.ErrClosedPipe):
			s.finish(nil)
			return nil, false
		case err != nil:
			s.finish(fmt.Errorf("kitsoki plugin: read request: %w", err))
			return nil, false
		}
		req, err := parseRequest(line)
		if err != nil {
			s.refuse(frameError(err, line))
			continue
		}
		if isNull(req.ID) {
			if req.Method == MethodCancelRequest {
				s.cancelCall(line)
			}
			continue // other notifications: the protocol has none to act on
		}
		if req.Method == "" {
			s.reply(req.ID, nil, &Error{Code: CodeInvalidRequest, Message: "not a JSON-RPC request: method is missing"})
			continue
		}
		switch {
		case s.hostOps != nil && req.Method == MethodHostInvoke:
			s.prepareHost(ctx, req, line)
		case s.hostOps == nil && req.Method == MethodAgentToolInvoke:
			s.prepareTool(ctx, req, line)
		}
		return req, true
	}
}

func (s *stdioServer) finish(err error) {
	s.doneOnce.Do(func() { s.done <- err })
}

// request is one incoming message, decoded in a single pass with the
// params already an AskRequest (agent.ask is the hot path); an
// agent_tool.invoke request decodes its params again as a tool request.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *AskRequest     `json:"params"`
	// paramsErr is why params did not decode as an AskRequest.
	paramsErr error

	// tool is an agent_tool.invoke call's params, with the context it
	// runs under (cancelled by $/cancelRequest) and its cancel key.
	tool    *AgentToolRequest
	host    *HostInvokeRequest // a host.invoke call's params
	toolCtx context.Context    // the context of a cancellable call (agent tool, host op)
	cancel  context.CancelFunc
	key     string
}

// parseRequest decodes line, envelope and AskRequest params in one
// json.Unmarshal. A syntax error is returned; params of the wrong shape
// are kept on the request, to be reported for agent.ask only.
func parseRequest(line []byte) (*request, error) {
	var req request
	err := json.Unmarshal(line, &req)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Field, "params"):
		req.paramsErr = err
	default:
		return nil, err
	}
	return &req, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// call runs one request.
func (s *stdioServer) call(ctx context.Context, req *request) (any, error) {
	if s.hostOps != nil {
		switch req.Method {
		case MethodHostInvoke:
			return s.hostInvoke(req)
		case MethodHostDescribe:
			return s.hostDescribe(), nil
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found (this host plugin answers %s and %s)", req.Method, MethodHostInvoke, MethodHostDescribe)}
	}
	switch req.Method {
	case MethodAsk:
		return s.ask(ctx, req)
	case MethodAgentToolInvoke:
		return s.invokeTool(req)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found (this plugin answers %s)", req.Method, MethodAsk)}
}

// ask runs one agent.ask call; a panicking agent becomes an error
// response.
func (s *stdioServer) ask(ctx context.Context, req *request) (resp *AskResponse, err error) {
	if req.paramsErr != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("agent.ask: params are not an AskRequest: %v", req.paramsErr)}
	}
	if req.Params == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "agent.ask: params are missing (want an AskRequest object)"}
	}
	defer func() {
		if p := recover(); p != nil {
			log.Printf("kitsoki plugin: agent panicked: %v\n%s", p, debug.Stack())
			resp, err = nil, &Error{Code: CodeAgentError, Message: fmt.Sprintf("agent panicked: %v", p)}
		}
	}()
	resp, err = s.agent.Ask(ctx, req.Params)
	if err == nil && resp == nil {
		resp = &AskResponse{}
	}
	return resp, err
}

var replyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// reply writes one response line: the result, or err as a JSON-RPC error.
func (s *stdioServer) reply(id json.RawMessage, resp any, err error) {
	buf := replyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			replyPool.Put(buf)
		}
	}()
	buf.Reset()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if err == nil {
		buf.WriteString(`,"result":`)
		if encErr := json.NewEncoder(buf).Encode(resp); encErr != nil {
			buf.Truncate(len(`{"jsonrpc":"2.0","id":`) + len(id))
			what := "AskResponse"
			switch resp.(type) {
			case *AgentToolResult:
				what = "AgentToolResult"
			case *HostInvokeResult:
				what = "HostInvokeResult"
			}
			err = &Error{Code: CodeAgentError, Message: fmt.Sprintf("encode %s: %v", what, encErr)}
		} else {
			buf.Truncate(buf.Len() - 1) // Encode's newline
		}
	}
	if err != nil {
		buf.WriteString(`,"error":`)
		json.NewEncoder(buf).Encode(errorObject(err))
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString("}\n")
	if werr := s.stream.WriteLine(buf.Bytes()); werr != nil && !errors.Is(werr, os.ErrClosed) {
		log.Printf("kitsoki plugin: write response: %v", werr)
	}
}

// refuse answers an unreadable request line with a parse error.
func (s *stdioServer) refuse(err error) {
	log.Printf("kitsoki plugin: refused a request: %v", err)
	s.reply(json.RawMessage("null"), nil, &Error{Code: CodeParseError, Message: err.Error()})
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// errorObject turns an error returned by Agent.Ask into a JSON-RPC error.
func errorObject(err error) wireError {
	var pe *Error
	if errors.As(err, &pe) {
		return wireError{Code: pe.Code, Message: pe.Message, Data: pe.Data}
	}
	return wireError{Code: CodeAgentError, Message: err.Error()}
}
