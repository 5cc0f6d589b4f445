package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// conn is kitsoki's end of a plugin's JSON-RPC 2.0 connection
// (wire-protocols.md §4), over the protocol's line framing: requests and
// notifications go out, responses come back and are matched to their
// calls by id, in any order.
//
// It is a small client of its own rather than jsonrpc2.Conn: that one
// marshals params into generic maps and decodes every result three times,
// which for a 1 KB prompt costs more than the pipe round trip, and its
// API offers no way to hand it bytes already encoded. A request is
// written straight from its encoded params, and a result is handed back
// as the raw bytes of the response line. JSON-RPC error objects are
// still *jsonrpc2.Error, so callers recover codes with errors.As.
type conn struct {
	ls     *plugin.LineStream
	logger *slog.Logger
	fail   func(error) // records why the connection ended

	mu      sync.Mutex
	pending map[uint64]chan reply // calls waiting; a nil channel was abandoned
	closed  bool
	done    chan struct{} // closed once the connection is over

	wmu sync.Mutex   // guards buf
	buf bytes.Buffer // the line being written
}

// reply is what a call gets back: a result, an error object, or the end
// of the connection.
type reply struct {
	result json.RawMessage
	err    *jsonrpc2.Error
	closed bool
}

// errClosed is a call's error when the connection ended before its reply.
var errClosed = errors.New("connection closed")

// writeError is a failure to write a request to the plugin's stdin.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// newConn starts reading ls; fail is told the error that ends it.
func newConn(ls *plugin.LineStream, logger *slog.Logger, fail func(error)) *conn {
	c := &conn{ls: ls, logger: logger, fail: fail, pending: map[uint64]chan reply{}, done: make(chan struct{})}
	go c.read()
	return c
}

// call sends request id with params (already encoded JSON) and waits for
// its reply or ctx. A call ctx gave up on stays known, so its late answer
// is dropped quietly. Errors: ctx's, errClosed, a *writeError, or the
// plugin's *jsonrpc2.Error.
func (c *conn) call(ctx context.Context, id uint64, method string, params []byte) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(id, true, method, params); err != nil {
		c.mu.Lock()
		closed := c.closed
		delete(c.pending, id)
		c.mu.Unlock()
		if closed {
			return nil, errClosed
		}
		return nil, &writeError{err}
	}
	select {
	case r := <-ch:
		switch {
		case r.closed:
			return nil, errClosed
		case r.err != nil:
			return nil, r.err
		}
		return r.result, nil
	case <-ctx.Done():
		c.mu.Lock()
		if _, ok := c.pending[id]; ok {
			c.pending[id] = nil
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// notify sends a notification (no id, no reply).
func (c *conn) notify(method string, params []byte) error {
	return c.write(0, false, method, params)
}

// write sends {"jsonrpc":"2.0","id":N,"method":"M","params":P} (without
// the id for a notification) as one line.
func (c *conn) write(id uint64, withID bool, method string, params []byte) error {
	name, err := json.Marshal(method)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.buf.Reset()
	c.buf.WriteString(`{"jsonrpc":"2.0",`)
	if withID {
		c.buf.WriteString(`"id":`)
		c.buf.Write(strconv.AppendUint(c.buf.AvailableBuffer(), id, 10))
		c.buf.WriteByte(',')
	}
	c.buf.WriteString(`"method":`)
	c.buf.Write(name)
	c.buf.WriteString(`,"params":`)
	c.buf.Write(params)
	c.buf.WriteString("}\n")
	err = c.ls.WriteLine(c.buf.Bytes())
	if c.buf.Cap() > 1<<20 {
		c.buf = bytes.Buffer{}
	}
	return err
}

// read dispatches incoming lines until one ends the connection.
func (c *conn) read() {
	for {
		line, err := c.ls.ReadLine()
		if err == nil {
			err = c.dispatch(line)
		}
		if err != nil {
			c.fail(err)
			c.close()
			return
		}
	}
}

// envelope is an incoming message as dispatch reads it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"` // "null" when the result is null
	Error  json.RawMessage `json:"error"`
}

// errNoKind refuses a message that is neither a request nor a response.
var errNoKind = errors.New("message is neither a request nor a response (no method, result or error)")

// dispatch hands a response to its call. A line that is not a JSON-RPC
// object ends the connection with a *plugin.FrameError; so does a request
// or notification, which a plugin may not send.
func (c *conn) dispatch(line []byte) error {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return frameError(err, line)
	}
	hasError := len(env.Error) > 0 && string(env.Error) != "null"
	if env.Method != nil {
		kind := "request"
		if env.ID == nil {
			kind = "notification"
		}
		return fmt.Errorf("plugin sent a %s (method %q) but may only send responses", kind, *env.Method)
	}
	if env.Result == nil && !hasError {
		return frameError(errNoKind, line)
	}
	var rpcErr *jsonrpc2.Error
	if hasError {
		rpcErr = new(jsonrpc2.Error)
		if err := json.Unmarshal(env.Error, rpcErr); err != nil {
			return frameError(err, line)
		}
	}
	id, _ := strconv.ParseUint(string(env.ID), 10, 64) // 0, never used, if not a number
	c.mu.Lock()
	ch, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	switch {
	case !ok:
		c.logger.Warn("ignoring response #" + string(env.ID) + " with no corresponding request")
	case ch != nil: // nil: the caller stopped waiting
		ch <- reply{result: env.Result, err: rpcErr}
	}
	return nil
}

// frameError copies the head of line, which lives in a reused buffer.
func frameError(err error, line []byte) *plugin.FrameError {
	return &plugin.FrameError{Err: err, Line: append([]byte(nil), line[:min(len(line), 257)]...)}
}

// close ends the connection: the stream is closed, calls still waiting
// get errClosed, and done is closed. It is idempotent.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.ls.Close()
	for _, ch := range pending {
		if ch != nil {
			ch <- reply{closed: true}
		}
	}
	close(c.done)
}
