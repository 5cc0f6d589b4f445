package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/plugin"
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
// as the raw bytes of the response line (or, for agent.ask, decoded in
// the same pass as the envelope). JSON-RPC error objects are still
// *jsonrpc2.Error, so callers recover codes with errors.As.
//
// Who reads. One goroutine at a time holds the right to read (tok). A
// caller whose request is written takes it and reads until its own reply
// arrives, handing other calls' replies to them on the way, so the usual
// call gets its answer on its own goroutine, with no hand-off from a
// reader thread (on a shared virtual machine that wake-up costs as much
// as the plugin's work). When no caller waits to read, the idle reader
// goroutine reads instead, idleAfter after the last caller stopped
// reading, so output between calls is still taken soon after it comes
// (stdout ending, a line that breaks the protocol, a late answer) and a
// large answer never blocks a caller writing a large request for long.
// Back-to-back calls never wake it, and cost no timer each: one timer per
// connection, armed when the last caller leaves and not already armed,
// looks at most once per idleAfter while calls keep coming (idleDue). A
// caller that wants to read while the idle reader is blocked in a read
// interrupts it with a read deadline in the past (rd); so does the end of
// a reading caller's context. Without rd (a stream with no deadlines)
// callers wait for whoever reads.
type conn struct {
	ls     *plugin.LineStream
	rd     readDeadliner // the stream's read side; nil: reads cannot be interrupted
	logger *slog.Logger
	fail   func(error) // records why the connection ended

	tok       chan struct{} // holding its one token is the right to read
	kick      chan struct{} // tells the idle reader to take the token when it is free
	idleTimer *time.Timer   // kicks the idle reader once no caller read for idleAfter (idleCheck)

	mu            sync.Mutex
	pending       map[uint64]*waiter // calls waiting; a nil waiter was abandoned
	closed        bool
	done          chan struct{} // closed once the connection is over
	waitingToRead int           // callers that sent their request and want to read
	idleReading   bool          // the idle reader holds the token and reads
	reader        *waiter       // the caller holding the token, if one does
	deadlineSet   bool          // rd has a deadline in the past
	left          time.Time     // when the last caller wanting to read left
	idleArmed     bool          // idleTimer is armed

	wmu sync.Mutex   // guards buf
	buf bytes.Buffer // the line being written

	strays int // responses with no corresponding request (read by the token holder only)
}

// strayDetail is how many stray responses are logged one by one; past
// it, one line at each tenfold count.
const strayDetail = 10

// readDeadliner is the read side of the plugin's stdout (*os.File).
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// waiter is one call waiting for its reply.
type waiter struct {
	ch  chan reply // buffered: gets exactly one reply
	ask bool       // an agent.ask call: its result may arrive decoded
}

// reply is what a call gets back: a result, an error object, or the end
// of the connection.
type reply struct {
	result json.RawMessage
	resp   *plugin.AskResponse // an agent.ask result decoded with its envelope
	err    *jsonrpc2.Error
	closed bool
}

// errClosed is a call's error when the connection ended before its reply.
var errClosed = errors.New("connection closed")

// writeError is a failure to write a request to the plugin's stdin.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// newConn starts the idle reader of ls; rd, if not nil, is the read side
// of ls whose deadline interrupts a blocked read. fail is told the error
// that ends the connection.
func newConn(ls *plugin.LineStream, rd readDeadliner, logger *slog.Logger, fail func(error)) *conn {
	c := &conn{ls: ls, rd: rd, logger: logger, fail: fail, pending: map[uint64]*waiter{},
		done: make(chan struct{}), tok: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
	c.tok <- struct{}{}
	c.kick <- struct{}{}
	c.idleTimer = time.AfterFunc(time.Hour, c.idleCheck)
	c.idleTimer.Stop()
	go c.idle()
	return c
}

// idleAfter is how long the idle reader waits after the last caller
// stopped reading before it reads itself.
const idleAfter = time.Millisecond

// idleCheck is idleTimer's function: it has the idle reader take over once
// no caller has wanted to read for idleAfter, and otherwise looks again
// when that could be the case.
func (c *conn) idleCheck() {
	c.mu.Lock()
	kick, wait := idleDue(c.closed, c.waitingToRead, c.left, time.Now())
	if wait > 0 {
		c.idleTimer.Reset(wait)
	} else {
		c.idleArmed = false
	}
	c.mu.Unlock()
	if kick {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// idleDue decides for idleCheck: kick the idle reader now, look again in
// wait, or (neither) stop looking until the last caller next leaves. The
// idle reader is due when no caller wants to read and the last one left
// idleAfter ago or more.
func idleDue(closed bool, waitingToRead int, left, now time.Time) (kick bool, wait time.Duration) {
	if closed || waitingToRead > 0 {
		return false, 0
	}
	return clock.Due(idleAfter, left, now)
}

// call sends request id with params (already encoded JSON) and waits for
// its reply or ctx. A call ctx gave up on stays known, so its late answer
// is dropped quietly. Errors: ctx's, errClosed, a *writeError, or the
// plugin's *jsonrpc2.Error.
func (c *conn) call(ctx context.Context, id uint64, method string, params []byte) (json.RawMessage, error) {
	r, err := c.roundTrip(ctx, id, method, params, false)
	return r.result, err
}

// ask is call of agent.ask: a well-formed result comes back decoded
// (resp), anything else as call returns it (result), for decodeResult to
// judge with its own messages.
func (c *conn) ask(ctx context.Context, id uint64, params []byte) (reply, error) {
	return c.roundTrip(ctx, id, plugin.MethodAsk, params, true)
}

func (c *conn) roundTrip(ctx context.Context, id uint64, method string, params []byte, ask bool) (reply, error) {
	w := &waiter{ch: make(chan reply, 1), ask: ask}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return reply{}, errClosed
	}
	c.pending[id] = w
	c.mu.Unlock()
	if err := c.write(id, true, method, params); err != nil {
		c.mu.Lock()
		closed := c.closed
		delete(c.pending, id)
		c.mu.Unlock()
		if closed {
			return reply{}, errClosed
		}
		return reply{}, &writeError{err}
	}
	r, err := c.await(ctx, w)
	if err != nil {
		c.mu.Lock()
		if _, ok := c.pending[id]; ok {
			c.pending[id] = nil
		}
		c.mu.Unlock()
		return reply{}, err
	}
	switch {
	case r.closed:
		return reply{}, errClosed
	case r.err != nil:
		return reply{}, r.err
	}
	return r, nil
}

// await waits for w's reply, reading it itself whenever it may.
func (c *conn) await(ctx context.Context, w *waiter) (reply, error) {
	c.mu.Lock()
	c.waitingToRead++
	if c.idleReading {
		c.interruptLocked()
	}
	c.mu.Unlock()
	defer c.leave()
	for {
		select {
		case r := <-w.ch:
			return r, nil
		case <-ctx.Done():
			return reply{}, ctx.Err()
		case <-c.tok:
			select {
			case r := <-w.ch: // answered while the token was elsewhere
				c.tok <- struct{}{}
				return r, nil
			default:
			}
			c.readFor(ctx, w)
		}
	}
}

// leave is a caller no longer wanting to read. The last one to leave
// has the idle reader take over in idleAfter, unless a caller reads by
// then.
func (c *conn) leave() {
	c.mu.Lock()
	c.waitingToRead--
	if c.waitingToRead == 0 {
		c.left = time.Now()
		if !c.idleArmed && !c.closed {
			c.idleArmed = true
			c.idleTimer.Reset(idleAfter)
		}
	}
	c.mu.Unlock()
}

// readFor reads, holding the token, until w's reply is in, ctx ends or
// the connection does; then it gives the token back.
func (c *conn) readFor(ctx context.Context, w *waiter) {
	c.mu.Lock()
	c.reader = w
	c.mu.Unlock()
	if c.rd != nil && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			c.mu.Lock()
			if c.reader == w {
				c.interruptLocked()
			}
			c.mu.Unlock()
		})
		defer stop()
	}
	defer func() {
		c.mu.Lock()
		c.reader = nil
		c.clearDeadlineLocked()
		c.mu.Unlock()
		c.tok <- struct{}{}
	}()
	for len(w.ch) == 0 {
		line, err := c.ls.ReadLine()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.mu.Lock()
			c.clearDeadlineLocked()
			c.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if !c.handle(line, err) {
			return
		}
	}
}

// idle is the idle reader: it reads while no caller does, and gives the
// token up as soon as one wants it.
func (c *conn) idle() {
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		select {
		case <-c.tok:
		case <-c.done:
			return
		}
		c.mu.Lock()
		if c.waitingToRead > 0 {
			c.mu.Unlock()
			c.tok <- struct{}{}
			continue
		}
		c.idleReading = true
		c.mu.Unlock()
		for {
			line, err := c.ls.ReadLine()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.mu.Lock()
				c.clearDeadlineLocked()
				yield := c.waitingToRead > 0
				if yield {
					c.idleReading = false
				}
				c.mu.Unlock()
				if yield {
					break
				}
				continue
			}
			if !c.handle(line, err) {
				return // the connection is over; nobody reads again
			}
		}
		c.tok <- struct{}{}
	}
}

// handle dispatches a line read; false once the connection is over.
func (c *conn) handle(line []byte, err error) bool {
	if err == nil {
		err = c.dispatch(line)
	}
	if err != nil {
		c.fail(err)
		c.close()
		return false
	}
	return true
}

// interruptLocked makes the read in progress (or the next) return
// os.ErrDeadlineExceeded. c.mu is held.
func (c *conn) interruptLocked() {
	if c.rd == nil || c.deadlineSet {
		return
	}
	if c.rd.SetReadDeadline(time.Unix(1, 0)) == nil {
		c.deadlineSet = true
	}
}

// clearDeadlineLocked lifts an interrupting deadline. c.mu is held.
func (c *conn) clearDeadlineLocked() {
	if c.deadlineSet {
		_ = c.rd.SetReadDeadline(time.Time{})
		c.deadlineSet = false
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
	if c.dispatchAsk(line) {
		return nil
	}
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
		c.stray(env.ID)
	case ch != nil: // nil: the caller stopped waiting
		ch.ch <- reply{result: env.Result, err: rpcErr}
	}
	return nil
}

// stray logs a response with no corresponding request: the first
// strayDetail one by one, then a count at 100, 1000, 10000, … so a plugin
// flooding them cannot flood the log.
func (c *conn) stray(id json.RawMessage) {
	c.strays++
	n := c.strays
	switch {
	case n <= strayDetail:
		c.logger.Warn("ignoring response #" + string(id) + " with no corresponding request")
	case isPowerOf10(n):
		c.logger.Warn(fmt.Sprintf("ignored %d responses with no corresponding request so far (the plugin answers calls nobody made; logging again at %d)", n, n*10))
	}
}

func isPowerOf10(n int) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// askEnvelope is a successful agent.ask response, decoded with its result
// in one json.Unmarshal.
type askEnvelope struct {
	ID     json.RawMessage     `json:"id"`
	Method *string             `json:"method"`
	Result *plugin.AskResponse `json:"result"`
	Error  json.RawMessage     `json:"error"`
}

// idPrefix is how a response line starts when its id comes first, as
// kitsoki's SDK and most JSON-RPC libraries write it.
const idPrefix = `{"jsonrpc":"2.0","id":`

// dispatchAsk takes the common case in one decode: a response whose
// numeric id leads the line and names a waiting agent.ask call, with an
// object result and no error. It reports whether it delivered the
// reply; anything else (another method's call, a null, malformed or
// mistyped result, an error, a request) is left to dispatch's general
// path, which words every refusal.
func (c *conn) dispatchAsk(line []byte) bool {
	if !bytes.HasPrefix(line, []byte(idPrefix)) {
		return false
	}
	digits := line[len(idPrefix):]
	n := 0
	for n < len(digits) && n < 20 && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	if n == 0 || n == len(digits) || digits[n] != ',' {
		return false
	}
	id, err := strconv.ParseUint(string(digits[:n]), 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	w := c.pending[id]
	c.mu.Unlock()
	if w == nil || !w.ask {
		return false
	}
	result, decoded := decodeAskReply(line, digits[:n])
	if !decoded {
		return false
	}
	c.mu.Lock()
	w, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if ok && w != nil {
		w.ch <- reply{resp: result}
	}
	return true
}

// decodeAskReply decodes a response to an agent.ask call whose id is id,
// envelope and result in one encoding/json decode. False if it is not a
// success response with an object result under that id.
func decodeAskReply(line, id []byte) (*plugin.AskResponse, bool) {
	var env askEnvelope
	if json.Unmarshal(line, &env) != nil || env.Method != nil || env.Result == nil ||
		!bytes.Equal(env.ID, id) || (len(env.Error) > 0 && string(env.Error) != "null") {
		return nil, false
	}
	return env.Result, true
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
	c.idleTimer.Stop()
	_ = c.ls.Close()
	for _, w := range pending {
		if w != nil {
			w.ch <- reply{closed: true}
		}
	}
	close(c.done)
}
