package trace

import (
	"errors"
	"log/slog"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// Sink receives trace events. The orchestrator and the host write through
// it; Writer (a file) and MemSink (memory) implement it with the same rules.
//
// Append assigns ev.Seq (dense per turn from 0, whatever the caller put
// there) and, when ev.TS is empty, ev.TS from the sink's clock; a given TS is
// normalised to UTC RFC3339Nano. Both are written back into *ev so the caller
// learns the seq its event got (needed for a live call_id). A nil payload is
// written as {}. The payload is checked and redacted before anything is
// written; the caller's maps are never modified. Turns never decrease: an
// Append with a lower turn than the previous one fails.
//
// AppendPayload is Append for the kinds kitsoki writes: p is the typed
// payload and sets ev.Kind (leave it empty, or set it to p's kind);
// ev.Payload must be nil. It writes the same bytes Append writes for the
// payload as a map, without building or sorting one. Append stays for
// open payloads: the sub-events a plugin returns, and events read back.
//
// Because Append writes TS back, an Event reused for a second Append keeps
// the first one's TS unless the caller clears it.
//
// NextSeq tells which seq the next Append for a turn will assign, so the
// host can derive a live call_id (turn:state_path:seq) and put it on the
// agent.call.start line itself. It is exact only while nothing else appends
// to that turn between NextSeq and Append; callers that append from several
// goroutines in one turn must serialise the pair.
//
// EndTurn marks a turn boundary; the file writer fsyncs there (group
// commit). Now is the sink's clock, for callers that need a ts before the
// event is appended (agent.call.start carries the dispatch time).
type Sink interface {
	Append(ev *Event) error
	AppendPayload(ev *Event, p Payload) error
	NextSeq(turn int64) int
	EndTurn() error
	Close() error
	Now() time.Time
}

// Errors returned by sinks. Messages are the spec's; use errors.Is.
var (
	ErrLocked   = errors.New("trace file is locked by another writer")
	ErrReplaced = errors.New("trace file replaced under us")
	ErrClosed   = errors.New("trace sink is closed")
)

var errNilPayload = errors.New("trace: AppendPayload given a nil payload")

// Option configures a Writer or MemSink.
type Option func(*config)

type config struct {
	clock        clock.Clock
	syncPerEvent bool
	noSync       bool
	syncHook     func()
	tailCheck    bool
	coalesce     bool
	header       HeaderInfo
	secrets      []string
	logger       *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{clock: clock.System{}}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// WithClock sets the clock used for ts values and the header's written_at.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithSyncPerEvent makes the Writer fsync after every line instead of at
// EndTurn and Close (kitsoki run --trace-sync=event). MemSink ignores it.
func WithSyncPerEvent() Option {
	return func(cfg *config) { cfg.syncPerEvent = true }
}

// WithNoSync makes the Writer never fsync the file: each line still goes
// to the kernel in one write(2) before Append returns, so the trace
// survives a killed process but not a power cut (kitsoki run --durability
// process). It overrides WithSyncPerEvent. The header of a new file is
// still synced.
func WithNoSync() Option {
	return func(cfg *config) { cfg.noSync = true }
}

// WithSyncHook calls fn after every fsync of the file (the header's
// included): a test hook that counts them.
func WithSyncHook(fn func()) Option {
	return func(cfg *config) { cfg.syncHook = fn }
}

// WithTailCheck makes Create on an existing file check only its header and
// its last line (it must end in a newline and decode) instead of reading
// the whole file, so appending costs the same whatever the file's length.
// The session journal uses it: its earlier lines were checked when they
// were written, and resume reads the file from its last snapshot.
func WithTailCheck() Option {
	return func(cfg *config) { cfg.tailCheck = true }
}

// WithCoalesce makes the Writer gather the lines of a turn in the process
// and hand them to the kernel in one write(2) at the points where losing
// them would cost a call: after harness.dispatched (before the call goes
// out), after harness.returned (its answer, bound), at EndTurn and at
// Close. A killed process loses only the
// lines computed since the last of those, which a resumed session
// recomputes. The session journal uses it (fewer system calls per turn);
// WithSyncPerEvent turns it off.
func WithCoalesce() Option {
	return func(cfg *config) { cfg.coalesce = true }
}

// WithHeader sets what a new file's session.header names beyond its
// schema version (app id, story path and hash, kitsoki version, session
// id). An existing file keeps its header.
func WithHeader(h HeaderInfo) Option {
	return func(cfg *config) { cfg.header = h }
}

// WithSecrets gives the resolved secret values to mask in payloads, by the
// rule of internal/base/secret: a value of 8 bytes or more wherever it occurs in
// a payload string or map key, a shorter one only where a whole payload
// string equals it; the words that rule keeps (AskError kinds, agent
// verbs) are never rewritten, and the envelope (kind, state_path, call_id,
// episode_id) is never masked. Empty values are ignored. Successive calls
// add to the set.
func WithSecrets(values []string) Option {
	return func(cfg *config) { cfg.secrets = append(cfg.secrets, values...) }
}

// WithLogger sets where the Writer logs opens, resumes and write failures.
// The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) {
		if l != nil {
			cfg.logger = l
		}
	}
}
