package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Header is line 1 of a trace file.
type Header struct {
	SchemaVersion int
	WrittenAt     string
	HeaderInfo
}

// HeaderInfo is what a session.header says about the session beyond its
// schema version. Every field is optional: headers written before these
// fields existed (and Kitsoki's) have none of them.
type HeaderInfo struct {
	// AppID is the story's app.id (the call_id formula's app id).
	AppID string `json:"app_id,omitempty"`
	// StoryPath is the path of the story's root file as given to kitsoki.
	StoryPath string `json:"story_path,omitempty"`
	// StoryHash is the story's content hash (story.Story.ContentHash).
	StoryHash string `json:"story_hash,omitempty"`
	// KitsokiVersion is the version of kitsoki that started the session.
	KitsokiVersion string `json:"kitsoki_version,omitempty"`
	// SessionID is the session's id.
	SessionID string `json:"session_id,omitempty"`
	// ForkedFrom and ForkedAtTurn name the session and turn a fork was
	// started from (kitsoki session fork).
	ForkedFrom   string `json:"forked_from,omitempty"`
	ForkedAtTurn int64  `json:"forked_at_turn,omitempty"`
}

// FormatError is a trace file that breaks a read rule. Msg is the whole
// message (the spec's wording); Line is the 1-based line it concerns, or 0
// when the problem is the end of the file.
type FormatError struct {
	Line int
	Msg  string
}

func (e *FormatError) Error() string { return e.Msg }

func formatErr(line int, format string, args ...any) error {
	return &FormatError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// msgMissingNewline is the read error for a file whose last line has no
// newline: a torn write or a truncated copy.
const msgMissingNewline = "trace corrupted: missing trailing newline at EOF"

// ReadFile reads and checks a whole trace file and returns its events (the
// header excluded), in file order.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	evs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	return evs, nil
}

// Read reads and checks a whole trace and returns its events.
func Read(r io.Reader) ([]Event, error) {
	_, evs, err := ReadAll(r)
	return evs, err
}

// ReadAll reads and checks a whole trace and returns its header and events.
//
// Every read rule is enforced; the first violation ends the read with a
// *FormatError. Unknown kinds, unknown payload keys and unknown envelope
// fields are accepted (the last are dropped: the envelope is fixed). Payload
// numbers are json.Number so they re-encode exactly as read.
func ReadAll(r io.Reader) (Header, []Event, error) {
	var evs []Event
	h, err := scanTrace(r, true, func(ev *Event) { evs = append(evs, *ev) })
	if err != nil {
		return Header{}, nil, err
	}
	return h, evs, nil
}

// DecodeHeader reads a trace's line 1 (without its newline) by the
// header's read rules.
func DecodeHeader(line []byte) (Header, error) { return decodeHeader(line) }

// DecodeLine reads one event line (without its newline) as the reader
// does: numbers as json.Number, a missing payload as {}. It applies the
// line's own rules, not the order rules, which need the lines before it.
func DecodeLine(line []byte) (Event, error) {
	if _, err := checkLine(line, 0); err != nil {
		return Event{}, err
	}
	if !startsObject(line) {
		return Event{}, errors.New("trace corrupted: line is not a JSON object")
	}
	ev, err := decodeEvent(line, true)
	if err != nil {
		return Event{}, err
	}
	if ev.Kind == "" {
		return Event{}, errors.New("trace corrupted: line has no kind")
	}
	return ev, nil
}

// position is where a trace ends: the writer resumes from it.
type position struct {
	any  bool // the trace holds at least one event
	turn int64
	seq  int
}

// scanPosition checks a trace with the same rules as ReadAll, without
// materialising payloads, and reports its last (turn, seq).
func scanPosition(r io.Reader) (position, error) {
	var p position
	_, err := scanTrace(r, false, func(ev *Event) {
		p = position{any: true, turn: ev.Turn, seq: ev.Seq}
	})
	return p, err
}

// scanTrace applies every read rule and hands each event to fn in file
// order. With full unset, events carry only turn, seq and kind and their
// payloads are checked but not decoded.
func scanTrace(r io.Reader, full bool, fn func(ev *Event)) (Header, error) {
	lr := lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	first, err := lr.next()
	if errors.Is(err, io.EOF) {
		return Header{}, formatErr(1, "trace missing session.header on line 1")
	}
	if err != nil {
		return Header{}, err
	}
	h, err := decodeHeader(first)
	if err != nil {
		return Header{}, err
	}
	var ord orderChecker
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return h, nil
		}
		if err != nil {
			return Header{}, err
		}
		n := lr.n
		if !startsObject(line) {
			return Header{}, formatErr(n, "trace corrupted: line %d is not a JSON object", n)
		}
		ev, err := decodeEvent(line, full)
		if err != nil {
			return Header{}, formatErr(n, "trace corrupted: line %d: %v", n, err)
		}
		switch ev.Kind {
		case "":
			return Header{}, formatErr(n, "trace corrupted: line %d has no kind", n)
		case KindSessionHeader:
			return Header{}, formatErr(n, "duplicate session.header at line %d", n)
		}
		if err := ord.check(n, ev.Turn, ev.Seq); err != nil {
			return Header{}, err
		}
		fn(&ev)
	}
}

var errPayloadShape = errors.New("payload is not a JSON object")

// decodeEvent decodes one event line. Both modes accept and refuse the same
// lines: any JSON object whose envelope fields have the right types and
// whose payload is an object, null or absent. Unknown fields are ignored.
func decodeEvent(line []byte, full bool) (Event, error) {
	if !full {
		// Every envelope field is declared so a mistyped one fails
		// here exactly as it does in the full decode.
		var re struct {
			Turn    int64           `json:"turn"`
			Seq     int             `json:"seq"`
			TS      string          `json:"ts"`
			Kind    string          `json:"kind"`
			State   string          `json:"state_path"`
			Parent  int64           `json:"parent_turn"`
			CallID  string          `json:"call_id"`
			Episode string          `json:"episode_id"`
			Match   int             `json:"match_idx"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(line, &re); err != nil {
			return Event{}, err
		}
		if p := re.Payload; len(p) > 0 && string(p) != "null" && p[0] != '{' {
			return Event{}, errPayloadShape
		}
		return Event{Turn: re.Turn, Seq: re.Seq, Kind: re.Kind}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber() // payload numbers round-trip exactly
	var ev Event
	err := dec.Decode(&ev)
	if err == nil {
		if tok, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = terr
			if err == nil {
				err = fmt.Errorf("unexpected %v after the JSON object", tok)
			}
		}
	}
	if err != nil {
		// The stream decoder words syntax errors its own way (a
		// truncated object is "unexpected EOF"); report what the
		// position scan reports for the same line, so a trace is
		// refused with one message whichever reads it.
		if _, serr := decodeEvent(line, false); serr != nil {
			return Event{}, serr
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field == "payload" {
			return Event{}, errPayloadShape
		}
		return Event{}, err
	}
	if ev.Payload == nil {
		ev.Payload = map[string]any{}
	}
	return ev, nil
}

func decodeHeader(line []byte) (Header, error) {
	if bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
		return Header{}, formatErr(1, "trace corrupted: byte-order mark at start of file")
	}
	if !startsObject(line) {
		return Header{}, formatErr(1, "trace missing session.header on line 1")
	}
	var raw struct {
		Kind          string          `json:"kind"`
		SchemaVersion json.RawMessage `json:"schema_version"`
		WrittenAt     string          `json:"written_at"`
		HeaderInfo
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Header{}, formatErr(1, "trace corrupted: line 1: %v", err)
	}
	if raw.Kind != KindSessionHeader {
		return Header{}, formatErr(1, "trace missing session.header on line 1")
	}
	v, err := strconv.Atoi(string(raw.SchemaVersion))
	if err != nil || v < 1 {
		return Header{}, formatErr(1, "trace corrupted: session.header schema_version %s is not a positive integer", clipRaw(raw.SchemaVersion))
	}
	if v > SchemaVersion {
		return Header{}, formatErr(1, "schema_version %d on disk exceeds highest supported %d", v, SchemaVersion)
	}
	return Header{SchemaVersion: v, WrittenAt: raw.WrittenAt, HeaderInfo: raw.HeaderInfo}, nil
}

func clipRaw(b []byte) string {
	if len(b) == 0 {
		return "(missing)"
	}
	if len(b) > 32 {
		return string(b[:32]) + "…"
	}
	return string(b)
}

func startsObject(line []byte) bool {
	t := bytes.TrimLeft(line, " \t")
	return len(t) > 0 && t[0] == '{'
}

// orderChecker enforces the (turn, seq) rules:
//
//	turn lower than the previous line's        -> out-of-order turn
//	same turn, same seq                        -> duplicate (turn,seq)
//	same turn, lower seq                       -> out-of-order (turn,seq)
//	same turn, seq skips a number              -> gap in seq within turn T
//	first line of a turn (or file), seq != 0   -> gap in seq within turn T
type orderChecker struct {
	started bool
	turn    int64
	seq     int
}

func (c *orderChecker) check(line int, turn int64, seq int) error {
	switch {
	case !c.started || turn > c.turn:
		if seq != 0 {
			return formatErr(line, "gap in seq within turn %d at line %d", turn, line)
		}
	case turn < c.turn:
		return formatErr(line, "out-of-order turn at line %d", line)
	case seq == c.seq:
		return formatErr(line, "duplicate (turn,seq) at line %d", line)
	case seq < c.seq:
		return formatErr(line, "out-of-order (turn,seq) at line %d", line)
	case seq > c.seq+1:
		return formatErr(line, "gap in seq within turn %d at line %d", turn, line)
	}
	c.started, c.turn, c.seq = true, turn, seq
	return nil
}

// lineReader splits a trace into lines and applies the byte-level rules.
type lineReader struct {
	br  *bufio.Reader
	acc []byte
	n   int // number of the last line returned
}

// next returns the next line without its newline, or io.EOF at a clean end.
// The slice is valid until the following call.
func (lr *lineReader) next() ([]byte, error) {
	lr.acc = lr.acc[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil:
			lr.n++
			line := chunk
			if len(lr.acc) > 0 {
				lr.acc = append(lr.acc, chunk...)
				line = lr.acc
			}
			return checkLine(line[:len(line)-1], lr.n)
		case errors.Is(err, bufio.ErrBufferFull):
			lr.acc = append(lr.acc, chunk...)
		case errors.Is(err, io.EOF):
			if len(lr.acc)+len(chunk) > 0 {
				return nil, formatErr(0, msgMissingNewline)
			}
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("read trace: %w", err)
		}
	}
}

func checkLine(line []byte, n int) ([]byte, error) {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return nil, formatErr(n, "trace corrupted: CRLF line ending at line %d", n)
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, formatErr(n, "trace corrupted: carriage return in line %d", n)
	}
	if bytes.IndexByte(line, 0) >= 0 {
		return nil, formatErr(n, "trace corrupted: NUL byte in line %d", n)
	}
	if len(line) == 0 {
		return nil, formatErr(n, "trace corrupted: empty line %d", n)
	}
	return line, nil
}

// tailPosition checks a trace's header and its last line only and reports
// the last (turn, seq): the O(1) resume of WithTailCheck.
func tailPosition(f io.ReaderAt, size int64) (position, error) {
	var p position
	head := make([]byte, min(size, 4096))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return p, fmt.Errorf("read trace: %w", err)
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		if size <= int64(len(head)) {
			return p, formatErr(0, msgMissingNewline)
		}
		return p, formatErr(1, "trace corrupted: line 1 is longer than 4096 bytes")
	}
	if _, err := decodeHeader(head[:nl]); err != nil {
		return p, err
	}
	last, start, err := LastLine(f, size)
	if err != nil {
		return p, err
	}
	if start == 0 { // only the header
		return p, nil
	}
	ev, err := DecodeLine(last)
	if err != nil {
		return p, formatErr(0, "trace corrupted: last line: %v", err)
	}
	return position{any: true, turn: ev.Turn, seq: ev.Seq}, nil
}

// LastLine returns the last whole line of a trace of size bytes (without
// its newline) and the offset it starts at. A file that does not end in a
// newline is refused with the torn-write message.
func LastLine(f io.ReaderAt, size int64) ([]byte, int64, error) {
	if size == 0 {
		return nil, 0, formatErr(1, "trace missing session.header on line 1")
	}
	end := make([]byte, 1)
	if _, err := f.ReadAt(end, size-1); err != nil {
		return nil, 0, fmt.Errorf("read trace: %w", err)
	}
	if end[0] != '\n' {
		return nil, 0, formatErr(0, msgMissingNewline)
	}
	chunk := int64(8192)
	for {
		from := max(size-1-chunk, 0)
		buf := make([]byte, size-1-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("read trace: %w", err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return buf[i+1:], from + int64(i) + 1, nil
		}
		if from == 0 {
			return buf, 0, nil
		}
		chunk *= 4
	}
}
