package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

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

// lineEncoder turns events into trace lines. One buffer is reused for every
// line; a steady-state Append allocates nothing but, once every 32 lines,
// the chunk the ts strings handed back are cut from (and what the payload
// walk needs for values it does not know: structs, objects of a new
// shape).
type lineEncoder struct {
	pay   *payloadEncoder
	seq   sequencer
	buf   []byte
	clock tsFormat
	// tsText is where the ts strings handed back are cut from: one
	// allocation serves many lines. Bytes once handed out are never
	// written again.
	tsText []byte
}

// tsTextSize is the size of a tsText chunk: 32 lines' timestamps.
const tsTextSize = 32 * len("2006-01-02T15:04:05.999999999Z")

// tsString returns ts as a string cut from tsText.
func (e *lineEncoder) tsString(ts []byte) string {
	if len(ts) == 0 {
		return ""
	}
	if cap(e.tsText)-len(e.tsText) < len(ts) {
		e.tsText = make([]byte, 0, max(tsTextSize, len(ts)))
	}
	at := len(e.tsText)
	e.tsText = append(e.tsText, ts...)
	return unsafe.String(&e.tsText[at], len(ts))
}

// tsFormat writes timestamps as time.RFC3339Nano does in UTC. The date and
// time of day of the last second written are kept: lines come many a
// second.
type tsFormat struct {
	sec   int64 // Unix time of the second day holds
	valid bool
	day   [40]byte // sec as "2006-01-02T15:04:05" in UTC
	n     int      // bytes of day
}

// append appends t in UTC in time.RFC3339Nano's layout.
func (f *tsFormat) append(b []byte, t time.Time) []byte {
	sec := t.Unix()
	if !f.valid || sec != f.sec {
		// RFC3339 writes the second without a fraction; "Z" ends it.
		d := time.Unix(sec, 0).UTC().AppendFormat(f.day[:0], time.RFC3339)
		f.sec, f.valid, f.n = sec, true, copy(f.day[:], d[:len(d)-1])
	}
	b = append(b, f.day[:f.n]...)
	if ns := t.Nanosecond(); ns != 0 {
		// Nine digits, trailing zeros dropped.
		var frac [10]byte
		frac[0], frac[1] = '.', byte('0'+ns/1e8)
		ns %= 1e8
		for i := 8; i > 0; i -= 2 {
			d := ns % 100
			frac[i], frac[i+1] = digitPairs[2*d], digitPairs[2*d+1]
			ns /= 100
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

func newLineEncoder(mask *secret.Masker) *lineEncoder {
	return &lineEncoder{pay: newPayloadEncoder(mask)}
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
	var p pending
	if typed != nil && ev != nil {
		if err := takeKind(ev, typed); err != nil {
			return nil, p, err
		}
	}
	plains, err := checkEnvelope(ev)
	if err != nil {
		return nil, p, err
	}
	seq, newTurn, err := e.seq.next(ev.Turn)
	if err != nil {
		return nil, p, err
	}
	b := e.buf[:0]
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, ev.Turn, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"ts":"`...)
	tsStart := len(b)
	if ev.TS == "" {
		b = e.clock.append(b, now)
	} else {
		t, err := time.Parse(time.RFC3339Nano, ev.TS)
		if err != nil {
			return nil, p, fmt.Errorf("trace: %s event: ts %q is not an RFC3339 timestamp", ev.Kind, ev.TS)
		}
		b = e.clock.append(b, t)
	}
	ts := e.tsString(b[tsStart:])
	b = append(b, `","kind":`...)
	b = appendEnvelopeString(b, ev.Kind, plains&1 != 0)
	if ev.StatePath != "" {
		b = append(b, `,"state_path":`...)
		b = appendEnvelopeString(b, ev.StatePath, plains&2 != 0)
	}
	if ev.ParentTurn != 0 {
		b = append(b, `,"parent_turn":`...)
		b = strconv.AppendInt(b, ev.ParentTurn, 10)
	}
	if ev.CallID != "" {
		b = append(b, `,"call_id":`...)
		b = appendEnvelopeString(b, ev.CallID, plains&4 != 0)
	}
	if ev.EpisodeID != "" {
		b = append(b, `,"episode_id":`...)
		b = appendEnvelopeString(b, ev.EpisodeID, plains&8 != 0)
	}
	if ev.MatchIdx != 0 {
		b = append(b, `,"match_idx":`...)
		b = strconv.AppendInt(b, int64(ev.MatchIdx), 10)
	}
	b = append(b, `,"payload":`...)
	if typed != nil {
		b, err = e.pay.encodeTyped(b, typed)
	} else {
		b, err = e.pay.encodeUnder(b, ev.Payload, ev.Kind)
	}
	if err != nil {
		return nil, p, fmt.Errorf("trace: %s event: %w", ev.Kind, err)
	}
	b = append(b, "}\n"...)
	e.buf = b
	p = pending{turn: ev.Turn, seq: seq, ts: ts, newTurn: newTurn}
	return b, p, nil
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
// format depends on. Bit i of plains is set when string field i (kind,
// state_path, call_id, episode_id) is written as it is.
func checkEnvelope(ev *Event) (plains uint8, err error) {
	if ev == nil {
		return 0, fmt.Errorf("trace: nil event")
	}
	switch {
	case ev.Kind == "":
		return 0, fmt.Errorf("trace: event has no kind")
	case ev.Kind == KindSessionHeader:
		return 0, fmt.Errorf("trace: kind %q is reserved for line 1 of the file", KindSessionHeader)
	case ev.Turn < 0:
		return 0, fmt.Errorf("trace: %s event: turn %d is negative", ev.Kind, ev.Turn)
	case ev.ParentTurn < 0:
		return 0, fmt.Errorf("trace: %s event: parent_turn %d is negative", ev.Kind, ev.ParentTurn)
	case ev.MatchIdx < 0:
		return 0, fmt.Errorf("trace: %s event: match_idx %d is negative", ev.Kind, ev.MatchIdx)
	}
	for i, f := range [...]struct{ name, v string }{
		{"kind", ev.Kind}, {"state_path", ev.StatePath}, {"call_id", ev.CallID}, {"episode_id", ev.EpisodeID},
	} {
		plain, err := checkKey(f.v)
		if err != nil {
			return 0, fmt.Errorf("trace: event field %s: %w", f.name, err)
		}
		if plain {
			plains |= 1 << i
		}
	}
	return plains, nil
}

// appendEnvelopeString writes an envelope field checked by checkEnvelope;
// plain says it is written as it is.
func appendEnvelopeString(b []byte, s string, plain bool) []byte {
	if !plain {
		return appendJSONString(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// plainByte marks the ASCII bytes encoding/json copies into a string
// unescaped (with HTML escaping on): printable, and not " \ < > &.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with HTML escaping on: <, >, & and control characters as \u00XX
// (except \b \f \n \r \t), U+2028/U+2029 escaped, invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	return appendJSONStringFrom(b, s, plainPrefix(s))
}

// appendJSONStringFrom is appendJSONString for s whose first i bytes are
// known to be written as they are (plainPrefix).
func appendJSONStringFrom(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0
	for i < len(s) {
		if plainByte[s[i]] {
			i++
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFloat writes a float the way encoding/json does (ES6 number to
// string: %f-like, exponent form below 1e-6 and from 1e21).
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, ErrNaNOrInf
	}
	abs := math.Abs(f)
	if bits == 64 && abs >= 1e-6 && abs < 1e6 {
		if out, ok := appendShortDecimal(b, f); ok {
			return out, nil
		}
	}
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json does.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// pow10 holds the powers of ten appendShortDecimal tries.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6}

// appendShortDecimal writes f, 1e-6 <= |f| < 1e6, when it is a decimal of
// at most six places (0.92, 7.5, 250.5): the text strconv's shortest 'f'
// form gives, without its general digit generation. n·10⁻ᵏ is the
// shortest text that reads back as f when k is the fewest places for
// which it does: n and 10ᵏ are exact, so n/10ᵏ rounds exactly as reading
// the text does, and at this magnitude one n at most fits each k. ok is
// false for any other f.
func appendShortDecimal(b []byte, f float64) ([]byte, bool) {
	for k, p := range pow10 {
		n := math.Round(f * p)
		if n/p != f {
			continue
		}
		u := uint64(math.Abs(n))
		if k > 0 && u%10 == 0 {
			return b, false // cannot be: k was not the fewest places
		}
		if f < 0 {
			b = append(b, '-')
		}
		if k == 0 {
			return strconv.AppendUint(b, u, 10), true
		}
		div := uint64(p)
		b = strconv.AppendUint(b, u/div, 10)
		b = append(b, '.')
		frac := u % div
		for d := div / 10; d > 0; d /= 10 { // k digits, leading zeros kept
			b = append(b, byte('0'+frac/d%10))
		}
		return b, true
	}
	return b, false
}

// appendNumber writes a json.Number verbatim after checking it is a JSON
// number; the empty Number is 0, as in encoding/json.
func appendNumber(b []byte, n json.Number) ([]byte, error) {
	s := string(n)
	if s == "" {
		return append(b, '0'), nil
	}
	if !isValidNumber(s) {
		return nil, errors.New("payload holds a json.Number that is not a JSON number")
	}
	return append(b, s...), nil
}

// isValidNumber reports whether s follows the JSON number grammar.
func isValidNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	digits := func() int {
		n := 0
		for n < len(s) && '0' <= s[n] && s[n] <= '9' {
			n++
		}
		s = s[n:]
		return n
	}
	switch {
	case s == "":
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		digits()
	default:
		return false
	}
	if len(s) > 0 && s[0] == '.' {
		s = s[1:]
		if digits() == 0 {
			return false
		}
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}

// headerLine is line 1 of every trace file.
func headerLine(now time.Time, h HeaderInfo) []byte {
	b := []byte(`{"kind":"session.header","schema_version":`)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, `,"written_at":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	for _, f := range []struct{ k, v string }{
		{"app_id", h.AppID}, {"story_path", h.StoryPath}, {"story_hash", h.StoryHash},
		{"kitsoki_version", h.KitsokiVersion}, {"session_id", h.SessionID}, {"forked_from", h.ForkedFrom},
	} {
		if f.v == "" {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, f.k...)
		b = append(b, '"', ':')
		v, _ := json.Marshal(f.v)
		b = append(b, v...)
	}
	if h.ForkedAtTurn > 0 {
		b = append(b, `,"forked_at_turn":`...)
		b = strconv.AppendInt(b, h.ForkedAtTurn, 10)
	}
	return append(b, "}\n"...)
}
