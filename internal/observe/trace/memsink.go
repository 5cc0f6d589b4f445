package trace

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// MemSink is a Sink that keeps the trace in memory: the same seq, ts,
// payload checks, redaction and encoding as Writer, without a file. Tests and
// the flow runner use it. WithClock and WithSecrets apply; the file options
// are ignored.
//
// It stores the encoded lines, so Events returns exactly what ReadFile
// would return for the same appends written to a file (payload numbers as
// json.Number, typed Go values as their JSON form, secrets masked).
// A MemSink is safe for concurrent use.
type MemSink struct {
	mu  sync.Mutex
	clk clock.Clock
	enc *lineEncoder
	// chunks hold the trace as on disk (header line, then event lines),
	// in blocks so a long trace is never copied to grow.
	chunks [][]byte
	head   int // the header line's length (chunks[0] starts with it)
	closed bool
	side   *memSidecars
}

// memChunk is the usual capacity of one block of a MemSink.
const memChunk = 64 << 10

var _ Sink = (*MemSink)(nil)

// NewMemSink returns an empty in-memory trace (header only).
func NewMemSink(opts ...Option) *MemSink {
	cfg := newConfig(opts)
	head := headerLine(cfg.clock.Now(), cfg.header)
	return &MemSink{
		clk:    cfg.clock,
		enc:    newLineEncoder(secret.New(cfg.secrets)),
		chunks: [][]byte{head},
		head:   len(head),
		side:   newMemSidecars(secret.New(cfg.secrets)),
	}
}

// WriteTranscript keeps a call's agent-action transcript in memory, as
// Writer would write it beside a trace file; see TranscriptSink.
func (m *MemSink) WriteTranscript(callID string, t *Transcript) (*TranscriptRef, error) {
	return m.side.store.write(callID, t)
}

// Sidecars returns the transcript files written so far, each with its
// path relative to the trace's directory, in the order they were written.
func (m *MemSink) Sidecars() []Sidecar { return m.side.list() }

// Append records one event; see Sink.
func (m *MemSink) Append(ev *Event) error { return m.append(ev, nil) }

// AppendPayload records one event with a typed payload; see Sink.
func (m *MemSink) AppendPayload(ev *Event, p Payload) error {
	if p == nil {
		return errNilPayload
	}
	return m.append(ev, p)
}

func (m *MemSink) append(ev *Event, typed Payload) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("trace: memory sink: %w", ErrClosed)
	}
	line, p, err := m.enc.encode(ev, typed, m.clk.Now())
	if err != nil {
		return err
	}
	last := &m.chunks[len(m.chunks)-1]
	if len(*last)+len(line) > cap(*last) {
		m.chunks = append(m.chunks, make([]byte, 0, max(memChunk, len(line))))
		last = &m.chunks[len(m.chunks)-1]
	}
	*last = append(*last, line...)
	m.enc.commit(ev, p)
	return nil
}

// NextSeq returns the seq the next Append for turn will assign; see Sink.
func (m *MemSink) NextSeq(turn int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enc.seq.peek(turn)
}

// EndTurn is a turn boundary; there is nothing to flush in memory.
func (m *MemSink) EndTurn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("trace: memory sink: %w", ErrClosed)
	}
	return nil
}

// Close stops further appends. The recorded trace stays readable.
func (m *MemSink) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// Forget drops the event lines recorded so far (the header stays); seq and
// the payload checks go on as before. A caller that reads the events as
// they are appended, and never the whole trace, calls it at each turn so a
// long run keeps no more than a turn's lines (the flow runner does).
func (m *MemSink) Forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chunks[0] = m.chunks[0][:m.head]
	var reuse []byte // the next block, written over
	if len(m.chunks) > 1 {
		reuse = m.chunks[1][:0]
	}
	clear(m.chunks[1:])
	m.chunks = m.chunks[:1]
	if reuse != nil {
		m.chunks = append(m.chunks, reuse)
	}
}

// Now reads the sink's clock.
func (m *MemSink) Now() time.Time { return m.clk.Now() }

// Bytes returns a copy of the trace as it would be on disk.
func (m *MemSink) Bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Join(m.chunks, nil)
}

// Events decodes and returns the recorded events, fresh on every call, so
// callers may modify what they get.
func (m *MemSink) Events() []Event {
	evs, err := Read(bytes.NewReader(m.Bytes()))
	if err != nil {
		// Only lines this package encoded are stored; an unreadable
		// one is a bug in the encoder, not a condition to handle.
		panic(fmt.Sprintf("trace: MemSink holds a trace its own reader rejects: %v", err))
	}
	return evs
}
