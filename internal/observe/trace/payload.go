package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Payload rejections. Append wraps them with the event kind and the location
// inside the payload (never the offending text, which could be a secret), so
// test for them with errors.Is.
var (
	ErrNULByte  = errors.New("payload contains NUL byte")
	ErrNotNFC   = errors.New("payload string contains NFD-normalised unicode (must be NFC)")
	ErrNaNOrInf = errors.New("payload contains a NaN or Inf number (JSON cannot encode it)")
	ErrTooDeep  = errors.New("payload nested deeper than 1000 levels")
)

// maxDepth bounds payload nesting so a cyclic or absurd value fails cleanly
// instead of exhausting the stack; Go's JSON decoder accepts 10000 levels, so
// everything we write stays readable.
const maxDepth = 1000

// payloadEncoder checks, redacts and encodes a payload in one walk, producing
// exactly the bytes encoding/json would produce for the redacted value
// (sorted object keys, HTML-safe escaping, ES6 float formatting). The common
// JSON-shaped Go types are handled directly; anything else (structs, typed
// maps, Marshalers) is turned into its JSON form with encoding/json first and
// then walked. The caller's values are never modified.
type payloadEncoder struct {
	// mask masks secret values (nil: nothing to mask).
	mask *secret.Masker
	// objs holds reusable scratch space per nesting depth for sorting
	// object keys.
	objs []objScratch
	// shapes remembers the keys of the objects written lately.
	shapes shapes
	// raw is scratch space for compacting embedded JSON.
	raw bytes.Buffer
	// w writes typed objects.
	w objWriter
	// seen records the objects already written in the payload being
	// encoded (see object).
	seen []seenObject
}

// seenObject is a map written at depth into b[start:end] of the current
// payload.
type seenObject struct {
	id         unsafe.Pointer
	depth      int
	start, end int
}

// memoMinKeys is the size from which an object is remembered: a decide's
// result carries its submission twice (submission and submitted), and
// writing the copy costs a memmove instead of a second walk and sort.
const memoMinKeys = 4

// memoMax bounds how many objects a payload remembers, so that a payload
// of many objects does not pay a growing search for each.
const memoMax = 16

func newPayloadEncoder(mask *secret.Masker) *payloadEncoder {
	if mask.Empty() {
		mask = nil
	}
	return &payloadEncoder{mask: mask}
}

// payloadError carries a rejection together with where it happened. The path
// is collected innermost-first while the walk unwinds, so the success path
// pays nothing for it.
type payloadError struct {
	err error
	rev []string
}

func (e *payloadError) Error() string {
	var b strings.Builder
	b.WriteString(e.err.Error())
	b.WriteString(" at payload")
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return b.String()
}

func (e *payloadError) Unwrap() error { return e.err }

func withSeg(err error, seg string) error {
	var pe *payloadError
	if errors.As(err, &pe) {
		pe.rev = append(pe.rev, seg)
		return pe
	}
	return &payloadError{err: err, rev: []string{seg}}
}

// encode appends the payload object to b. A nil or empty payload is {}.
func (e *payloadEncoder) encode(b []byte, p map[string]any) ([]byte, error) {
	return e.encodeUnder(b, p, "")
}

// encodeUnder is encode for the payload of an event of the given kind,
// under which its shape is remembered (see object): payloads of several
// kinds with as many keys do not take each other's place.
func (e *payloadEncoder) encodeUnder(b []byte, p map[string]any, kind string) ([]byte, error) {
	if len(p) == 0 {
		return append(b, "{}"...), nil
	}
	b, err := e.object(b, p, 1, kind)
	e.forget()
	if err != nil {
		var pe *payloadError
		if !errors.As(err, &pe) {
			err = &payloadError{err: err}
		}
		return nil, err
	}
	return b, nil
}

// forget drops the objects of the payload just written (and the
// references to the caller's maps).
func (e *payloadEncoder) forget() {
	clear(e.seen)
	e.seen = e.seen[:0]
}

// encodeTyped appends a typed payload object to b.
func (e *payloadEncoder) encodeTyped(b []byte, p Payload) ([]byte, error) {
	b, err := e.typed(b, p, 1)
	e.forget()
	if err != nil {
		var pe *payloadError
		if !errors.As(err, &pe) {
			err = &payloadError{err: err}
		}
		return nil, err
	}
	return b, nil
}

// typed writes a typed object: its fields in their fixed, sorted order.
func (e *payloadEncoder) typed(b []byte, f fields, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	// One writer is reused (a fresh one per object would escape to the
	// heap); a nested object saves and restores the outer one's state.
	w := &e.w
	outerN, outerDepth, outerErr := w.n, w.depth, w.err
	w.e, w.b, w.n, w.depth, w.err = e, append(b, '{'), 0, depth, nil
	f.appendFields(w)
	b, err := w.b, w.err
	w.b, w.n, w.depth, w.err = nil, outerN, outerDepth, outerErr
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// objWriter writes the fields of a typed object. Keys are kitsoki's own
// field names: plain ASCII, written as they are and never masked (like
// event kinds, they are the format). Values are checked and masked as in
// any payload. The first failure sticks; later fields are skipped.
type objWriter struct {
	e     *payloadEncoder
	b     []byte
	depth int
	n     int
	err   error
}

func (w *objWriter) key(k string) bool {
	if w.err != nil {
		return false
	}
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
	return true
}

func (w *objWriter) fail(k string, err error) {
	if err != nil {
		w.err = withSeg(err, "."+k)
	}
}

func (w *objWriter) str(k, v string) {
	if w.key(k) {
		var err error
		var b []byte
		if b, err = w.e.str(w.b, v); err == nil {
			w.b = b
		}
		w.fail(k, err)
	}
}

// strOmit writes a string field unless it is empty (omitempty).
func (w *objWriter) strOmit(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

func (w *objWriter) boolean(k string, v bool) {
	if w.key(k) {
		w.b = strconv.AppendBool(w.b, v)
	}
}

func (w *objWriter) int(k string, v int64) {
	if w.key(k) {
		w.b = strconv.AppendInt(w.b, v, 10)
	}
}

// intOmit writes an integer field unless it is 0 (omitempty).
func (w *objWriter) intOmit(k string, v int64) {
	if v != 0 {
		w.int(k, v)
	}
}

// object writes an open map (null when nil), keys sorted and masked as in
// any payload.
func (w *objWriter) object(k string, m map[string]any) {
	if !w.key(k) {
		return
	}
	if m == nil {
		w.b = append(w.b, "null"...)
		return
	}
	b, err := w.e.object(w.b, m, w.depth+1, k)
	if err == nil {
		w.b = b
	}
	w.fail(k, err)
}

// counts writes a map of integers (world.update increments).
func (w *objWriter) counts(k string, m map[string]int64) {
	if !w.key(k) {
		return
	}
	generic := make(map[string]any, len(m))
	for name, n := range m {
		generic[name] = n
	}
	b, err := w.e.object(w.b, generic, w.depth+1, k)
	if err == nil {
		w.b = b
	}
	w.fail(k, err)
}

// value writes an open value.
func (w *objWriter) value(k string, v any) {
	if !w.key(k) {
		return
	}
	b, err := w.e.value(w.b, v, w.depth+1, k)
	if err == nil {
		w.b = b
	}
	w.fail(k, err)
}

// typed writes a nested typed object.
func (w *objWriter) typed(k string, f fields) {
	if !w.key(k) {
		return
	}
	b, err := w.e.typed(w.b, f, w.depth+1)
	if err == nil {
		w.b = b
	}
	w.fail(k, err)
}

// value writes an open value found under the key parent (see object).
func (e *payloadEncoder) value(b []byte, v any, depth int, parent string) ([]byte, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return e.str(b, x)
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uintptr:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case json.Number: // a plugin's number: masked when a long secret is in it
		if masked, ok := e.mask.Number(string(x)); ok {
			return appendJSONString(b, masked), nil
		}
		return appendNumber(b, x)
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return e.object(b, x, depth, parent)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.value(b, el, depth+1, parent); err != nil {
				return nil, withSeg(err, indexSeg(i))
			}
		}
		return append(b, ']'), nil
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.str(b, el); err != nil {
				return nil, withSeg(err, indexSeg(i))
			}
		}
		return append(b, ']'), nil
	case map[string]string:
		if x == nil {
			return append(b, "null"...), nil
		}
		generic := make(map[string]any, len(x))
		for k, s := range x {
			generic[k] = s
		}
		return e.object(b, generic, depth, parent)
	case json.RawMessage:
		return e.rawJSON(b, x, depth, parent)
	case fields: // a typed value nested in an open field
		return e.typed(b, x, depth)
	default:
		return e.reflected(b, v, depth, parent)
	}
}

// str checks, masks and writes a string value. The checks and the
// escaping share one pass over the leading run of bytes that need neither
// (printable ASCII other than " \ < > &): most strings are all of it.
func (e *payloadEncoder) str(b []byte, s string) ([]byte, error) {
	i := plainPrefix(s)
	if i < len(s) {
		if err := checkRest(s, i); err != nil {
			return nil, err
		}
	}
	if e.mask != nil {
		if ms := e.mask.String(s); ms != s {
			return appendJSONString(b, ms), nil
		}
	}
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), nil
	}
	return appendJSONStringFrom(b, s, i), nil
}

// rawJSON writes embedded JSON (e.g. an agent's submission). When a look
// at the bytes proves there is nothing to check or redact, it is only
// compacted and HTML-escaped, as encoding/json does; otherwise it is decoded
// and walked like any other value.
func (e *payloadEncoder) rawJSON(b []byte, r json.RawMessage, depth int, parent string) ([]byte, error) {
	if len(r) == 0 {
		return append(b, "null"...), nil
	}
	if e.rawIsInert(r) {
		e.raw.Reset()
		if err := json.Compact(&e.raw, r); err != nil {
			return nil, fmt.Errorf("payload holds invalid embedded JSON: %w", err)
		}
		for _, c := range e.raw.Bytes() {
			switch c {
			case '<', '>', '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
		}
		return b, nil
	}
	generic, err := decodeGeneric(r)
	if err != nil {
		return nil, fmt.Errorf("payload holds invalid embedded JSON: %w", err)
	}
	return e.value(b, generic, depth, parent)
}

// rawIsInert reports whether embedded JSON certainly needs no change: plain
// ASCII without backslashes cannot hold a NUL, a non-NFC string or a NaN,
// and every string in it appears literally in the bytes, so if no secret and
// no sensitive header name occurs in the bytes, none occurs in any string.
func (e *payloadEncoder) rawIsInert(r []byte) bool {
	if !isPlainASCII(r) || bytes.IndexByte(r, '\\') >= 0 {
		return false
	}
	if containsFoldASCII(r, "cookie") || containsFoldASCII(r, "authorization") {
		return false
	}
	return !e.mask.MayOccur(r)
}

// containsFoldASCII reports whether b contains the lowercase ASCII word w in
// any letter case.
func containsFoldASCII(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if b[i]|0x20 != w[0] {
			continue
		}
		j := 1
		for j < len(w) && b[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// reflected handles any other Go value (structs, typed maps and slices,
// http.Header, Marshalers) through the JSON encoding/json gives it.
func (e *payloadEncoder) reflected(b []byte, v any, depth int, parent string) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		var uve *json.UnsupportedValueError
		if errors.As(err, &uve) && (uve.Str == "NaN" || strings.HasSuffix(uve.Str, "Inf")) {
			return nil, ErrNaNOrInf
		}
		return nil, fmt.Errorf("payload value of type %T cannot be encoded as JSON: %w", v, err)
	}
	generic, err := decodeGeneric(j)
	if err != nil {
		return nil, fmt.Errorf("payload value of type %T cannot be encoded as JSON: %w", v, err)
	}
	return e.value(b, generic, depth, parent)
}

// decodeGeneric decodes one JSON value, keeping numbers as json.Number.
func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// checkString applies the string rules: no NUL byte, Unicode NFC. Invalid
// UTF-8 is allowed; it is written as U+FFFD, like encoding/json does.
func checkString(s string) error { return checkRest(s, 0) }

// checkKey is checkString for an object key, and reports whether the key
// is written as it is (plainPrefix covers it).
func checkKey(k string) (plain bool, err error) {
	i := plainPrefix(k)
	if i == len(k) {
		return true, nil
	}
	return false, checkRest(k, i)
}

// plainPrefix is the length of the leading run of s that is printable
// ASCII other than " \ < > &: bytes that break no rule and that
// encoding/json writes as they are.
func plainPrefix(s string) int {
	i := 0
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

// checkRest is checkString for s whose first i bytes are ASCII without
// NUL.
func checkRest(s string, i int) error {
	for ; i < len(s); i++ {
		c := s[i]
		if c == 0 {
			return ErrNULByte
		}
		if c >= utf8.RuneSelf {
			if strings.IndexByte(s[i:], 0) >= 0 {
				return ErrNULByte
			}
			// The byte before i is ASCII, hence a starter, so NFC
			// normality of the text from there decides the whole.
			if !norm.NFC.IsNormalString(s[max(i-1, 0):]) {
				return ErrNotNFC
			}
			return nil
		}
	}
	return nil
}

// isSensitiveHeader reports whether a map key names a header whose value is
// always redacted: Authorization, Cookie, Set-Cookie, Proxy-Authorization,
// in any letter case.
func isSensitiveHeader(k string) bool {
	switch len(k) {
	case len("cookie"):
		return strings.EqualFold(k, "cookie")
	case len("set-cookie"):
		return strings.EqualFold(k, "set-cookie")
	case len("authorization"):
		return strings.EqualFold(k, "authorization")
	case len("proxy-authorization"):
		return strings.EqualFold(k, "proxy-authorization")
	}
	return false
}

func indexSeg(i int) string { return "[" + strconv.Itoa(i) + "]" }

func isPlainASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf || c == 0 {
			return false
		}
	}
	return true
}
