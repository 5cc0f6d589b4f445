// Package servertime measures, in benchmarks, how much of a request's
// round trip an in-test HTTP server spends on its own side, so the rest can
// be reported as the client's (kitsoki's) overhead.
//
// A request's server time runs from the moment its first bytes are read
// off the connection to the moment the last write of its response returns:
// the server's HTTP parsing, its handler and its response writes, and none
// of the client's work or the kernel's transit to and from it.
package servertime

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Clock sums server time over the connections of a wrapped listener. The
// zero value is ready to use.
type Clock struct {
	mu    sync.Mutex
	sum   time.Duration
	conns map[*conn]bool
}

// Wrap returns l with every accepted connection timed by c.
func (c *Clock) Wrap(l net.Listener) net.Listener { return &listener{Listener: l, clk: c} }

// Reset forgets the time measured so far.
func (c *Clock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tc := range c.conns {
		tc.settle()
	}
	c.sum = 0
}

// Total is the server time since Reset, counting the request in flight on
// each connection once its response has been written.
func (c *Clock) Total() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tc := range c.conns {
		c.sum += tc.settle()
	}
	return c.sum
}

// Report adds the metrics "kitsoki-ns/op" (elapsed, the wall time of b.N
// operations, minus the server time) and "server-ns/op" to b.
func (c *Clock) Report(b *testing.B, elapsed time.Duration) {
	server := c.Total()
	b.ReportMetric(float64(elapsed-server)/float64(b.N), "kitsoki-ns/op")
	b.ReportMetric(float64(server)/float64(b.N), "server-ns/op")
}

func (c *Clock) add(d time.Duration) {
	c.mu.Lock()
	c.sum += d
	c.mu.Unlock()
}

type listener struct {
	net.Listener
	clk *Clock
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &conn{Conn: nc, clk: l.clk}
	l.clk.mu.Lock()
	if l.clk.conns == nil {
		l.clk.conns = map[*conn]bool{}
	}
	l.clk.conns[tc] = true
	l.clk.mu.Unlock()
	return tc, nil
}

// conn tracks one server connection: a request opens when bytes are read
// while none is open, and closes with the last response write before the
// next request's bytes arrive.
type conn struct {
	net.Conn
	clk *Clock

	mu        sync.Mutex
	open      bool
	start     time.Time
	lastWrite time.Time
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		var done time.Duration
		if c.open && !c.lastWrite.IsZero() { // the previous request was answered
			done = c.lastWrite.Sub(c.start)
			c.open = false
		}
		if !c.open {
			c.open, c.start, c.lastWrite = true, now, time.Time{}
		}
		c.mu.Unlock()
		if done > 0 {
			c.clk.add(done)
		}
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.lastWrite = time.Now()
	c.mu.Unlock()
	return n, err
}

// settle closes the answered request in flight and returns its time.
func (c *conn) settle() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open || c.lastWrite.IsZero() {
		return 0
	}
	d := c.lastWrite.Sub(c.start)
	c.open, c.lastWrite = false, time.Time{}
	return d
}
