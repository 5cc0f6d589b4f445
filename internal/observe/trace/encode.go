package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// sequencer remembers where the trace is so seq stays dense per turn and
// turns never decrease. It only moves when a line has really been written.
type sequencer struct {
	started bool  // at least one event is in the trace
	turn    int64 // turn of the last event
	nextSeq int   // seq the next event of that turn gets
}

// next returns the seq an event of the given turn gets and whether the
// event opens a new turn.
func (s *sequencer) next(turn int64) (seq int, newTurn bool, err error) {
	if !s.started || turn > s.turn {
		return 0, true, nil
	}
	if turn < s.turn {
		return 0, false, fmt.Errorf("trace: event for turn %d after turn %d: turns never decrease", turn, s.turn)
	}
	return s.nextSeq, false, nil
}

// peek returns the seq the next event of turn would get: 0 for a turn the
// trace has not reached (and for a lower turn, which Append refuses).
func (s *sequencer) peek(turn int64) int {
	if !s.started || turn != s.turn {
		return 0
	}
	return s.nextSeq
}

func (s *sequencer) commit(turn int64, seq int) {
	s.started, s.turn, s.nextSeq = true, turn, seq+1
}

// line is a trace line as encoding/json writes it: the envelope's fields
// in the order the format fixes (trace-format.md §1), the payload last.
// The payload is the scrubbed typed payload or open map, or emptyObject.
type line struct {
	Turn       int64  `json:"turn"`
	Seq        int    `json:"seq"`
	TS         string `json:"ts"`
	Kind       string `json:"kind"`
	StatePath  string `json:"state_path,omitempty"`
	ParentTurn int64  `json:"parent_turn,omitempty"`
	CallID     string `json:"call_id,omitempty"`
	EpisodeID  string `json:"episode_id,omitempty"`
	MatchIdx   int    `json:"match_idx,omitempty"`
	Payload    any    `json:"payload"`
}

// lineEncoder turns events into trace lines with encoding/json. One
// encoder and its buffer are reused for every line, so a line costs what
// encoding/json's own work costs, and the line value is never allocated.
// encoding/json writes exactly what the format asks: compact, object keys
// sorted, <, > and & escaped, a newline after each value.
type lineEncoder struct {
	scrub scrubber
	seq   sequencer
	buf   bytes.Buffer
	json  *json.Encoder // writes into buf
	line  line
}

func newLineEncoder(mask *secret.Masker) *lineEncoder {
	e := &lineEncoder{scrub: newScrubber(mask)}
	e.json = json.NewEncoder(&e.buf)
	return e
}

// pending is what an encoded but not yet written line will assign.
type pending struct {
	turn    int64
	seq     int
	ts      string
	newTurn bool
}

// encode validates ev and encodes its line (with the trailing newline) into
// the reused buffer. The payload is typed when typed is not nil (ev.Kind is
// then set from it), else ev.Payload. Nothing is assigned yet: call commit
// once the line is stored. now is the sink's clock reading, used when ev.TS
// is empty.
func (e *lineEncoder) encode(ev *Event, typed Payload, now time.Time) ([]byte, pending, error) {
	payload, p, err := e.check(ev, typed, now)
	if err != nil {
		return nil, p, err
	}
	e.line = line{Turn: ev.Turn, Seq: p.seq, TS: p.ts, Kind: ev.Kind, StatePath: ev.StatePath, ParentTurn: ev.ParentTurn,
		CallID: ev.CallID, EpisodeID: ev.EpisodeID, MatchIdx: ev.MatchIdx, Payload: payload}
	if e.buf.Cap() > 1<<20 {
		e.buf = bytes.Buffer{} // one huge line does not pin its buffer for the rest of the run
	}
	e.buf.Reset()
	err = e.json.Encode(&e.line)
	e.line.Payload = nil // keep no reference to the caller's values
	if err != nil {
		return nil, p, fmt.Errorf("trace: %s event: payload cannot be encoded as JSON: %w", ev.Kind, err)
	}
	return e.buf.Bytes(), p, nil
}

// check applies every rule to ev (its kind, envelope, turn order, ts and
// payload) and returns the scrubbed payload to encode and what the line
// will assign; nothing is assigned yet.
func (e *lineEncoder) check(ev *Event, typed Payload, now time.Time) (any, pending, error) {
	var p pending
	if typed != nil && ev != nil {
		if err := takeKind(ev, typed); err != nil {
			return nil, p, err
		}
	}
	if err := checkEnvelope(ev); err != nil {
		return nil, p, err
	}
	seq, newTurn, err := e.seq.next(ev.Turn)
	if err != nil {
		return nil, p, err
	}
	ts, err := timestamp(ev, now)
	if err != nil {
		return nil, p, err
	}
	payload, err := e.scrub.payloadOf(typed, ev.Payload)
	if err != nil {
		return nil, p, fmt.Errorf("trace: %s event: %w", ev.Kind, err)
	}
	return payload, pending{turn: ev.Turn, seq: seq, ts: ts, newTurn: newTurn}, nil
}

// timestamp is the ts an event is written with: ev.TS normalised to UTC
// RFC3339Nano, or now when ev.TS is empty.
func timestamp(ev *Event, now time.Time) (string, error) {
	t := now
	if ev.TS != "" {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, ev.TS); err != nil {
			return "", fmt.Errorf("trace: %s event: ts %q is not an RFC3339 timestamp", ev.Kind, ev.TS)
		}
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// commit records that the encoded line is stored and tells the caller.
func (e *lineEncoder) commit(ev *Event, p pending) {
	e.seq.commit(p.turn, p.seq)
	ev.Seq = p.seq
	ev.TS = p.ts
}

// takeKind gives an event the kind of its typed payload. An event handed
// with a typed payload carries no map payload and no other kind.
func takeKind(ev *Event, p Payload) error {
	kind := p.Kind()
	switch {
	case ev.Payload != nil:
		return fmt.Errorf("trace: %s event: both a typed payload and a map payload given; set one", kind)
	case ev.Kind != "" && ev.Kind != kind:
		return fmt.Errorf("trace: event of kind %q given a %s payload (%T); leave Kind empty, the payload sets it", ev.Kind, kind, p)
	}
	ev.Kind = kind
	return nil
}

// checkEnvelope applies the rules on envelope fields that the reader or the
// format depends on.
func checkEnvelope(ev *Event) error {
	if ev == nil {
		return fmt.Errorf("trace: nil event")
	}
	switch {
	case ev.Kind == "":
		return fmt.Errorf("trace: event has no kind")
	case ev.Kind == KindSessionHeader:
		return fmt.Errorf("trace: kind %q is reserved for line 1 of the file", KindSessionHeader)
	case ev.Turn < 0:
		return fmt.Errorf("trace: %s event: turn %d is negative", ev.Kind, ev.Turn)
	case ev.ParentTurn < 0:
		return fmt.Errorf("trace: %s event: parent_turn %d is negative", ev.Kind, ev.ParentTurn)
	case ev.MatchIdx < 0:
		return fmt.Errorf("trace: %s event: match_idx %d is negative", ev.Kind, ev.MatchIdx)
	}
	for _, f := range [...]struct{ name, v string }{
		{"kind", ev.Kind}, {"state_path", ev.StatePath}, {"call_id", ev.CallID}, {"episode_id", ev.EpisodeID},
	} {
		if err := checkString(f.v); err != nil {
			return fmt.Errorf("trace: event field %s: %w", f.name, err)
		}
	}
	return nil
}

// headerLine is line 1 of every trace file.
func headerLine(now time.Time, h HeaderInfo) []byte {
	b, err := json.Marshal(struct {
		Kind          string `json:"kind"`
		SchemaVersion int    `json:"schema_version"`
		WrittenAt     string `json:"written_at"`
		HeaderInfo
	}{KindSessionHeader, SchemaVersion, now.UTC().Format(time.RFC3339Nano), h})
	if err != nil {
		// Strings and integers only: encoding/json cannot fail on them.
		panic(fmt.Sprintf("trace: encode session.header: %v", err))
	}
	return append(b, '\n')
}
