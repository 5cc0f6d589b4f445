// Package secret masks the values a story resolves from ${VAR} references
// (the env: and headers: of agent_plugins and providers) in everything
// kitsoki writes: traces, cassettes, eval reports, MCP tool results,
// stdout, stderr and logs. Every writer uses one Masker, so the rule is the
// same everywhere:
//
//   - a value of MinSubstring (8) bytes or more is masked wherever it
//     occurs as a substring, in string values, object keys and text, and
//     so is each encoded form of it (Forms: JSON-escaped, HTML-safe or not,
//     twice over, YAML-quoted, HTML- and JavaScript-escaped), so a value
//     holding ", \, <, >, & or non-ASCII characters is masked in the
//     encoded text an artifact holds too;
//   - a shorter value is masked only where a whole string value equals it
//     (a JSON string, a YAML scalar), or, in plain text, where a whole line
//     (surrounding spaces aside) equals it; it is never masked inside an
//     object key or inside a longer text, so short settings such as
//     DEBUG=1 or MODE=crash never garble a message;
//   - the agent error kinds (plugin_crash, schema_invalid, ...) and the
//     agent verbs (ask, decide, ...) are never rewritten: an occurrence of
//     a value that lies inside one of them is left alone.
//
// Each masked occurrence becomes Mask ("REDACTED"); overlapping
// occurrences become one. Kitsoki's envelope fields (event kinds, call
// ids) are never passed through a Masker.
package secret

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
)

// Mask replaces every masked occurrence of a secret.
const Mask = "REDACTED"

// MinSubstring is the length from which a value is masked wherever it
// occurs as a substring.
const MinSubstring = 8

// keptWords are never rewritten by masking: the error kinds of the agent
// contract (internal/agents/agent's AskError kinds), so the AskError text
// "agent: <kind>: <detail>" keeps its kind whatever the secrets are, and
// the agent verbs, so a short setting such as MODE=ask never turns an
// event's "verb" into REDACTED. A test keeps the list in step with
// internal/agents/agent and plugin.
var keptWords = [...]string{
	"schema_invalid",
	"plugin_crash",
	"deadline_exceeded",
	"transport_error",
	"sub_event_namespace_violation",
	"sub_event_call_id_mismatch",
	"ask",
	"decide",
	"extract",
	"task",
	"converse",
}

// KeptWords returns the words masking never rewrites.
func KeptWords() []string { return slices.Clone(keptWords[:]) }

// Masker masks a fixed set of secret values. The zero value and a nil
// *Masker mask nothing. A Masker is immutable and safe for concurrent use.
type Masker struct {
	long  []string // >= MinSubstring bytes, distinct, longest first
	short []string // 1..MinSubstring-1 bytes, distinct, longest first
	forms []string // every encoded form of each long value (Forms), distinct
	// blocks: each long value holding a line break, which YAML writes
	// with indentation after it.
	blocks []block
	all    [][]byte // the forms and the short values, as bytes, for MayOccur
}

// New returns a Masker for the given values. Empty values and repeats are
// ignored.
func New(values ...[]string) *Masker {
	m := &Masker{}
	for _, vs := range values {
		for _, v := range vs {
			switch {
			case v == "":
			case len(v) >= MinSubstring:
				if !slices.Contains(m.long, v) {
					m.long = append(m.long, v)
				}
			default:
				if !slices.Contains(m.short, v) {
					m.short = append(m.short, v)
				}
			}
		}
	}
	byLen := func(a, b string) int { return cmp.Compare(len(b), len(a)) }
	slices.SortStableFunc(m.long, byLen)
	slices.SortStableFunc(m.short, byLen)
	for _, v := range m.long {
		if bl, ok := newBlock(v); ok {
			m.blocks = append(m.blocks, bl)
		}
		for _, f := range Forms(v) {
			if !slices.Contains(m.forms, f) {
				m.forms = append(m.forms, f)
			}
		}
	}
	for _, v := range slices.Concat(m.forms, m.short) {
		m.all = append(m.all, []byte(v))
	}
	return m
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.long)+len(m.short) == 0 }

// MayOccur reports whether any secret could be masked somewhere in b: it
// is false only when no value occurs in b at all. Writers use it to skip
// work on data that certainly holds no secret.
func (m *Masker) MayOccur(b []byte) bool {
	if m.Empty() {
		return false
	}
	for _, v := range m.all {
		if bytes.Contains(b, v) {
			return true
		}
	}
	for _, bl := range m.blocks {
		if allOccur(b, bl) {
			return true
		}
	}
	return false
}

// allOccur reports whether every non-empty line occurs in b.
func allOccur(b []byte, bl block) bool {
	for _, l := range bl.lines {
		if l != "" && !bytes.Contains(b, []byte(l)) {
			return false
		}
	}
	return true
}

// block is a long value holding line breaks (\n, U+0085, U+2028,
// U+2029), which YAML writes with indentation after each: its lines and
// the break after each but the last.
type block struct {
	lines, breaks []string
}

// newBlock splits v at its line breaks; ok is false when it has none.
func newBlock(v string) (block, bool) {
	var bl block
	start := 0
	for i, r := range v {
		switch r {
		case '\n', '\u0085', '\u2028', '\u2029':
			bl.lines = append(bl.lines, v[start:i])
			bl.breaks = append(bl.breaks, string(r))
			start = i + len(string(r))
		}
	}
	if len(bl.breaks) == 0 || strings.TrimSpace(v) == "" {
		return block{}, false
	}
	bl.lines = append(bl.lines, v[start:])
	return bl, true
}

// blockSpans finds a multi-line secret written as YAML writes it: its
// lines with indentation after each line break.
func blockSpans(s string, bl block) [][2]int {
	var spans [][2]int
	first := bl.lines[0]
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], first)
		if i < 0 {
			break
		}
		start := off + i
		end, ok := start+len(first), true
		for k, l := range bl.lines[1:] {
			if !strings.HasPrefix(s[end:], bl.breaks[k]) {
				ok = false
				break
			}
			end += len(bl.breaks[k])
			for end < len(s) && s[end] == ' ' {
				end++
			}
			// The line's own leading spaces are not told from the
			// indentation.
			l = strings.TrimLeft(l, " ")
			if !strings.HasPrefix(s[end:], l) {
				ok = false
				break
			}
			end += len(l)
		}
		if ok && end > start {
			spans = append(spans, [2]int{start, end})
		}
		off = start + 1
	}
	return spans
}

// String masks a whole string value (a JSON string, a YAML scalar): the
// whole of it when it equals a secret, and every occurrence of a long
// secret inside it.
func (m *Masker) String(s string) string {
	if m.Empty() || s == "" {
		return s
	}
	if slices.Contains(m.short, s) || slices.Contains(m.long, s) {
		if isKept(s) {
			return s
		}
		return Mask
	}
	return m.replace(s, false)
}

// Key masks an object key: only long secrets, where they occur as a
// substring. A short value is never masked in a key, so the keys of
// kitsoki's own payloads are never rewritten.
func (m *Masker) Key(s string) string {
	if m.Empty() || s == "" || len(m.long) == 0 {
		return s
	}
	return m.replace(s, false)
}

// Number masks the text of a number (a JSON number, a YAML integer or
// float): it becomes Mask when a long secret occurs in it. A short value
// never masks a number, so DEBUG=1 leaves "turn: 1" alone. The second
// result reports whether it was masked.
func (m *Masker) Number(s string) (string, bool) {
	if m.Empty() || len(m.long) == 0 || m.replace(s, false) == s {
		return s, false
	}
	return Mask, true
}

// Text masks free text (a log line, an error message, a line on stderr):
// long secrets wherever they occur, a short one where a whole line
// (surrounding spaces aside) equals it.
func (m *Masker) Text(s string) string {
	if m.Empty() || s == "" {
		return s
	}
	return m.replace(s, true)
}

// replace masks the occurrences in s: every occurrence of a long secret,
// and, with lines set, every line that is a short one. Occurrences inside
// a kept word are left alone; overlapping ones merge.
func (m *Masker) replace(s string, lines bool) string {
	var spans [][2]int
	for _, v := range m.forms {
		for off := 0; off <= len(s)-len(v); {
			i := strings.Index(s[off:], v)
			if i < 0 {
				break
			}
			start, end := off+i, off+i+len(v)
			off = start + 1
			if !insideKept(s, start, end) {
				spans = append(spans, [2]int{start, end})
			}
		}
	}
	for _, bl := range m.blocks {
		spans = append(spans, blockSpans(s, bl)...)
	}
	if lines && len(m.short) > 0 {
		for start := 0; start < len(s); {
			end := strings.IndexByte(s[start:], '\n')
			if end < 0 {
				end = len(s)
			} else {
				end += start
			}
			line := s[start:end]
			trimmed := strings.TrimSpace(line)
			if trimmed != "" && slices.Contains(m.short, trimmed) && !isKept(trimmed) {
				at := start + strings.Index(line, trimmed)
				spans = append(spans, [2]int{at, at + len(trimmed)})
			}
			start = end + 1
		}
	}
	if spans == nil {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var out strings.Builder
	out.Grow(len(s))
	pos := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] < end; i++ {
			end = max(end, spans[i][1])
		}
		out.WriteString(s[pos:start])
		out.WriteString(Mask)
		pos = end
	}
	out.WriteString(s[pos:])
	return out.String()
}

func isKept(s string) bool { return slices.Contains(keptWords[:], s) }

// insideKept reports whether s[start:end] lies within an occurrence of a
// kept word in s.
func insideKept(s string, start, end int) bool {
	for _, w := range keptWords {
		if len(w) < end-start {
			continue
		}
		lo := max(0, end-len(w))
		hi := min(len(s), start+len(w))
		if lo >= hi {
			continue
		}
		for off := lo; off+len(w) <= hi; {
			i := strings.Index(s[off:hi], w)
			if i < 0 {
				break
			}
			ws := off + i
			if ws <= start && end <= ws+len(w) {
				return true
			}
			off = ws + 1
		}
	}
	return false
}

// Value returns a masked copy of a JSON-shaped value: strings as String,
// object keys as Key, json.Number as Number, recursively through
// map[string]any, []any, []string and map[string]string; json.RawMessage
// is decoded, masked and re-encoded when a secret may occur in it. Other
// values are returned as they are. The argument is never modified.
func (m *Masker) Value(v any) any {
	if m.Empty() {
		return v
	}
	return m.value(v, 0)
}

// maxDepth bounds the walk; a value nested deeper is replaced whole by
// Mask rather than written unmasked.
const maxDepth = 10000

func (m *Masker) value(v any, depth int) any {
	if depth > maxDepth {
		return Mask
	}
	switch x := v.(type) {
	case string:
		return m.String(x)
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[m.Key(k)] = m.value(el, depth+1)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = m.value(el, depth+1)
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		out := make([]string, len(x))
		for i, el := range x {
			out[i] = m.String(el)
		}
		return out
	case map[string]string:
		if x == nil {
			return x
		}
		out := make(map[string]string, len(x))
		for k, el := range x {
			out[m.Key(k)] = m.String(el)
		}
		return out
	case json.Number:
		if masked, ok := m.Number(string(x)); ok {
			return masked
		}
		return x
	case json.RawMessage:
		b, err := m.JSON(x)
		if err != nil {
			return json.RawMessage(`"` + Mask + `"`)
		}
		return json.RawMessage(b)
	default:
		return v
	}
}

// JSON masks a JSON document: its string values as String, its object keys
// as Key. A document in which no secret occurs is returned as it is;
// otherwise it is decoded (numbers kept exact) and re-encoded compactly,
// object keys sorted. Invalid JSON is an error.
func (m *Masker) JSON(b []byte) ([]byte, error) {
	if !m.MayOccur(b) {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return json.Marshal(m.value(v, 0))
}

// Writer returns a writer that masks what is written to w as Text. The
// text of each Write is masked on its own, so a secret split across two
// writes is not found: kitsoki writes whole lines (and slog whole records)
// in single calls. Writes are serialised, since a logger's goroutines and
// the command share the writer. With nothing to mask it returns w.
func (m *Masker) Writer(w io.Writer) io.Writer {
	if m.Empty() {
		return w
	}
	return &maskWriter{w: w, m: m}
}

type maskWriter struct {
	mu sync.Mutex
	w  io.Writer
	m  *Masker
}

// Write masks p and reports len(p) written when the masked text was.
func (mw *maskWriter) Write(p []byte) (int, error) {
	text := mw.m.Text(string(p))
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if _, err := io.WriteString(mw.w, text); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Error returns err with its text masked as Text; errors.Is and errors.As
// still see err. A nil err stays nil, and so does err itself when nothing
// in its text needs masking.
func (m *Masker) Error(err error) error {
	if err == nil || m.Empty() {
		return err
	}
	text := err.Error()
	masked := m.Text(text)
	if masked == text {
		return err
	}
	return &maskedError{err: err, text: masked}
}

type maskedError struct {
	err  error
	text string
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }
