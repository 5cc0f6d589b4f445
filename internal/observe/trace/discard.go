package trace

import (
	"fmt"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Discard is a Sink that applies every rule a Writer applies (seq, ts,
// turn order, the envelope and payload checks) and keeps nothing: no line
// is encoded. It is for runs whose trace nobody reads, such as kitsoki
// test flows without --trace or --json, whose events must still be
// refused exactly when a file would refuse them, and whose memory must
// not grow with the length of the run. WithClock and WithSecrets apply;
// the file options are ignored. A Discard is safe for concurrent use.
type Discard struct {
	mu     sync.Mutex
	clk    clock.Clock
	enc    *lineEncoder
	closed bool
}

var _ Sink = (*Discard)(nil)

// NewDiscard returns a sink that checks events and keeps none.
func NewDiscard(opts ...Option) *Discard {
	cfg := newConfig(opts)
	return &Discard{clk: cfg.clock, enc: newLineEncoder(secret.New(cfg.secrets))}
}

// Append checks one event; see Sink.
func (d *Discard) Append(ev *Event) error { return d.append(ev, nil) }

// AppendPayload checks one event with a typed payload; see Sink.
func (d *Discard) AppendPayload(ev *Event, p Payload) error {
	if p == nil {
		return errNilPayload
	}
	return d.append(ev, p)
}

func (d *Discard) append(ev *Event, typed Payload) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("trace: discarding sink: %w", ErrClosed)
	}
	_, p, err := d.enc.check(ev, typed, d.clk.Now())
	if err != nil {
		return err
	}
	d.enc.commit(ev, p)
	return nil
}

// NextSeq returns the seq the next Append for turn will assign; see Sink.
func (d *Discard) NextSeq(turn int64) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enc.seq.peek(turn)
}

// EndTurn is a turn boundary; there is nothing to flush.
func (d *Discard) EndTurn() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("trace: discarding sink: %w", ErrClosed)
	}
	return nil
}

// Close stops further appends.
func (d *Discard) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// Now reads the sink's clock.
func (d *Discard) Now() time.Time { return d.clk.Now() }
