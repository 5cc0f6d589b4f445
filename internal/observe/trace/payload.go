package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

// scrubber applies the payload rules to a payload before encoding/json
// writes it: every string is checked (no NUL byte, Unicode NFC), every
// number is finite, secrets are masked in strings, keys and plugin
// numbers, and the value of a sensitive header is replaced. Values whose
// JSON form it cannot see into (structs of other packages, typed maps,
// Marshalers) are first turned into that form with encoding/json.
//
// The caller's values are never modified: a map, slice or typed payload
// that needs a change is copied, and only then. A payload with nothing to
// mask is handed to the encoder as it came, so the common case allocates
// nothing here.
type scrubber struct {
	// mask masks secret values (nil: nothing to mask).
	mask *secret.Masker
	// depth is the nesting depth of the typed object being scrubbed.
	depth int
	// changed records that a field of the typed object being scrubbed
	// was replaced (see begin and end).
	changed bool
	// err is the first failure in the typed object being scrubbed, with
	// where it happened.
	err error
	// scratch holds the entries of the objects being scrubbed, one list
	// per depth, reused from payload to payload.
	scratch [][]entry
}

func newScrubber(mask *secret.Masker) scrubber {
	if mask.Empty() {
		mask = nil
	}
	return scrubber{mask: mask}
}

// scrubbable is a typed value (a payload kind, or a typed part of one)
// that knows its own fields. scrub checks and masks a copy of it and
// returns the copy when anything changed (changed true), else nil;
// failures are left on s.err.
type scrubbable interface {
	scrub(s *scrubber) (out any, changed bool)
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

// asPayloadError makes every rejection a *payloadError, so its message
// says "at payload" even for the payload itself.
func asPayloadError(err error) error {
	var pe *payloadError
	if errors.As(err, &pe) {
		return err
	}
	return &payloadError{err: err}
}

// payloadOf scrubs an event's payload: the typed one when typed is not
// nil, else the open map. It returns the value to encode: {} for an empty
// payload, the caller's own value when nothing changed.
func (s *scrubber) payloadOf(typed Payload, open map[string]any) (any, error) {
	if typed != nil {
		s.depth, s.changed, s.err = 1, false, nil
		out, changed := typed.scrub(s)
		err := s.err
		s.err = nil
		if err != nil {
			return nil, asPayloadError(err)
		}
		if changed {
			return out, nil
		}
		return typed, nil
	}
	if len(open) == 0 {
		return emptyObject{}, nil
	}
	out, _, err := s.object(open, 1)
	if err != nil {
		return nil, asPayloadError(err)
	}
	return out, nil
}

// emptyObject is written as {}: the payload of an event that has none.
type emptyObject struct{}

// The field helpers of typed objects. Each checks and masks one field in
// place (on the object's copy), notes a change, and leaves the first
// failure on s.err, named by the field's key. Keys are kitsoki's own
// field names: plain ASCII, never masked (like event kinds, they are the
// format).

// begin starts a typed object: it returns the enclosing object's change
// flag, for end.
func (s *scrubber) begin() (outer bool) {
	outer, s.changed = s.changed, false
	return outer
}

// end finishes a typed object begun with begin and reports whether any of
// its fields changed.
func (s *scrubber) end(outer bool) bool {
	changed := s.changed
	s.changed = outer || changed
	return changed
}

func (s *scrubber) fail(k string, err error) {
	if err != nil && s.err == nil {
		s.err = withSeg(err, "."+k)
	}
}

// str scrubs a string field.
func (s *scrubber) str(k string, v *string) {
	if s.err != nil {
		return
	}
	out, changed, err := s.string(*v)
	if err != nil {
		s.fail(k, err)
		return
	}
	if changed {
		*v, s.changed = out, true
	}
}

// float scrubs a float field: it must be finite.
func (s *scrubber) float(k string, f float64) {
	if s.err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		s.fail(k, ErrNaNOrInf)
	}
}

// open scrubs a field of any open value.
func (s *scrubber) open(k string, v *any) {
	if s.err != nil {
		return
	}
	out, changed, err := s.value(*v, s.depth+1)
	if err != nil {
		s.fail(k, err)
		return
	}
	if changed {
		*v, s.changed = out, true
	}
}

// obj scrubs a field holding an open object (nil stays nil).
func (s *scrubber) obj(k string, m *map[string]any) {
	if s.err != nil || *m == nil {
		return
	}
	out, changed, err := s.object(*m, s.depth+1)
	if err != nil {
		s.fail(k, err)
		return
	}
	if changed {
		*m, s.changed = out, true
	}
}

// counts scrubs a field holding named integers (world.update's
// increments): only its keys can break a rule or hold a secret. The
// values are counts, not header values, so a sensitive header name keeps
// its count. Two keys masked to the same text keep the count of the one
// that sorts first, as in an open object.
func (s *scrubber) counts(k string, m *map[string]int64) {
	if s.err != nil || *m == nil {
		return
	}
	changed := false
	for _, name := range slices.Sorted(maps.Keys(*m)) {
		out, _, err := s.key(name)
		if err != nil {
			s.fail(k, err)
			return
		}
		changed = changed || out != name
	}
	if !changed {
		return
	}
	c := make(map[string]int64, len(*m))
	for _, name := range slices.Sorted(maps.Keys(*m)) {
		out, _, _ := s.key(name)
		if _, dup := c[out]; !dup {
			c[out] = (*m)[name]
		}
	}
	*m, s.changed = c, true
}

// typed scrubs a nested typed object and returns its copy when it
// changed.
func (s *scrubber) typed(k string, v scrubbable) (any, bool) {
	if s.err != nil {
		return nil, false
	}
	if s.depth+1 > maxDepth {
		s.fail(k, ErrTooDeep)
		return nil, false
	}
	s.depth++
	out, changed := v.scrub(s)
	s.depth--
	if s.err != nil {
		s.err = withSeg(s.err, "."+k)
		return nil, false
	}
	return out, changed
}

// value scrubs an open value at depth. It returns the value to write and
// whether that is not v itself.
func (s *scrubber) value(v any, depth int) (any, bool, error) {
	if depth > maxDepth {
		return nil, false, ErrTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr:
		return v, false, nil
	case string:
		out, changed, err := s.string(x)
		if !changed {
			return v, false, err
		}
		return out, true, err
	case float64:
		return v, false, finite(x)
	case float32:
		return v, false, finite(float64(x))
	case json.Number:
		return s.number(x)
	case map[string]any:
		if x == nil {
			return v, false, nil
		}
		out, changed, err := s.object(x, depth)
		if !changed {
			return v, false, err
		}
		return out, true, err
	case []any:
		return s.list(x, depth)
	case []string:
		return s.strings(x)
	case map[string]string:
		return s.stringMap(x, depth)
	case json.RawMessage:
		return s.raw(x, depth)
	case scrubbable: // a typed value in an open field
		return s.nested(x, depth)
	default:
		return s.reflected(v, depth)
	}
}

func finite(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ErrNaNOrInf
	}
	return nil
}

// nested scrubs a typed value found in an open value.
func (s *scrubber) nested(v scrubbable, depth int) (any, bool, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, true, nil // a nil pointer to a typed value: null
	}
	outerDepth, outerChanged, outerErr := s.depth, s.changed, s.err
	s.depth, s.changed, s.err = depth, false, nil
	out, changed := v.scrub(s)
	err := s.err
	s.depth, s.changed, s.err = outerDepth, outerChanged, outerErr
	if err != nil || !changed {
		return v, false, err
	}
	return out, true, nil
}

// string checks a string and masks it.
func (s *scrubber) string(v string) (string, bool, error) {
	if err := checkString(v); err != nil {
		return "", false, err
	}
	if s.mask != nil {
		if out := s.mask.String(v); out != v {
			return out, true, nil
		}
	}
	return v, false, nil
}

// key checks an object key and masks it (long secrets only); sensitive
// reports a header name whose value is always redacted.
func (s *scrubber) key(k string) (out string, sensitive bool, err error) {
	if err := checkString(k); err != nil {
		// Named by position-free text, never by content: the key
		// itself could be a secret.
		return "", false, withSeg(err, "{key}")
	}
	out = k
	if s.mask != nil {
		out = s.mask.Key(k)
	}
	return out, isSensitiveHeader(k), nil
}

// number checks a plugin's number and masks it: a long secret in it makes
// it the string REDACTED. The empty Number is 0, as encoding/json writes
// it.
func (s *scrubber) number(n json.Number) (any, bool, error) {
	if masked, ok := s.mask.Number(string(n)); ok {
		return masked, true, nil
	}
	if n != "" && !isNumber(string(n)) {
		return nil, false, errors.New("payload holds a json.Number that is not a JSON number")
	}
	return n, false, nil
}

// isNumber reports whether s is a JSON number: a valid JSON text that
// starts and ends like one (a minus sign or digit first, a digit last,
// so no other value and no surrounding space).
func isNumber(s string) bool {
	first, last := s[0], s[len(s)-1]
	return (first == '-' || '0' <= first && first <= '9') && '0' <= last && last <= '9' && json.Valid([]byte(s))
}

// entry is one member of an open object as object scrubs it.
type entry struct {
	key, out string // the caller's key; the key as written
	v        any    // the value as written
	changed  bool   // key or value is written otherwise than it is
	err      error
}

// object scrubs an open object. Its entries are scrubbed once each into
// scratch space kept per depth; nothing is allocated unless an entry
// changes, and then the object is copied from what was scrubbed.
func (s *scrubber) object(m map[string]any, depth int) (map[string]any, bool, error) {
	for len(s.scratch) <= depth {
		s.scratch = append(s.scratch, nil)
	}
	es := s.scratch[depth][:0]
	changed, failed, masked := false, false, false
	for k, v := range m {
		e := s.entry(k, v, depth)
		changed = changed || e.changed
		failed = failed || e.err != nil
		masked = masked || e.out != k
		es = append(es, e)
	}
	s.scratch[depth] = es
	var out map[string]any
	var err error
	switch {
	case failed:
		err = firstFailure(es)
	case changed:
		out = copied(es, masked)
	}
	clear(es) // drop the references to the caller's values
	if err != nil || !changed {
		return m, false, err
	}
	return out, true, nil
}

// entry scrubs one member of an object at depth.
func (s *scrubber) entry(k string, v any, depth int) entry {
	nk, sensitive, err := s.key(k)
	if err != nil {
		return entry{key: k, out: k, err: err}
	}
	e := entry{key: k, out: nk, v: v, changed: nk != k}
	if sensitive {
		e.changed = e.changed || v != any(secret.Mask)
		e.v = secret.Mask
		return e
	}
	nv, changed, err := s.value(v, depth+1)
	if err != nil {
		e.err = withSeg(err, "."+nk)
		return e
	}
	e.v, e.changed = nv, e.changed || changed
	return e
}

// firstFailure is the failure of the first entry, in key order, that
// breaks a rule, so that an object is refused with the same message
// whatever order its map ranges in.
func firstFailure(es []entry) error {
	var first *entry
	for i := range es {
		if e := &es[i]; e.err != nil && (first == nil || e.key < first.key) {
			first = e
		}
	}
	return first.err
}

// copied builds the scrubbed copy of an object from its entries. Two keys
// masked to the same text keep one entry: the one whose key sorts first,
// which encoding/json would have written first.
func copied(es []entry, masked bool) map[string]any {
	out := make(map[string]any, len(es))
	if !masked {
		for _, e := range es {
			out[e.out] = e.v
		}
		return out
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := strings.Compare(a.out, b.out); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	for _, e := range es {
		if _, dup := out[e.out]; !dup {
			out[e.out] = e.v
		}
	}
	return out
}

// list scrubs an open array, copying it from the first element that
// changes.
func (s *scrubber) list(l []any, depth int) (any, bool, error) {
	if l == nil {
		return l, false, nil
	}
	var out []any
	for i, el := range l {
		nv, changed, err := s.value(el, depth+1)
		if err != nil {
			return nil, false, withSeg(err, indexSeg(i))
		}
		if changed && out == nil {
			out = slices.Clone(l)
		}
		if out != nil {
			out[i] = nv
		}
	}
	if out == nil {
		return l, false, nil
	}
	return out, true, nil
}

// strings scrubs a list of strings.
func (s *scrubber) strings(l []string) (any, bool, error) {
	var out []string
	for i, el := range l {
		nv, changed, err := s.string(el)
		if err != nil {
			return nil, false, withSeg(err, indexSeg(i))
		}
		if changed && out == nil {
			out = slices.Clone(l)
		}
		if out != nil {
			out[i] = nv
		}
	}
	if out == nil {
		return l, false, nil
	}
	return out, true, nil
}

// stringMap scrubs a map of strings (headers, for one) as an open object.
func (s *scrubber) stringMap(m map[string]string, depth int) (any, bool, error) {
	if m == nil {
		return m, false, nil
	}
	generic := make(map[string]any, len(m))
	for k, v := range m {
		generic[k] = v
	}
	out, changed, err := s.object(generic, depth)
	if err != nil || !changed {
		return m, false, err
	}
	return out, true, nil
}

// raw scrubs embedded JSON (an agent's submission, for one). When a look
// at the bytes proves there is nothing to check or mask, it is written as
// it is (encoding/json compacts it); otherwise it is decoded and scrubbed
// like any other value, and written from that value.
func (s *scrubber) raw(r json.RawMessage, depth int) (any, bool, error) {
	if len(r) == 0 {
		return nil, true, nil
	}
	if s.rawIsInert(r) {
		if !json.Valid(r) {
			return nil, false, fmt.Errorf("payload holds invalid embedded JSON: %w", json.Unmarshal(r, new(any)))
		}
		return r, false, nil
	}
	generic, err := decodeGeneric(r)
	if err != nil {
		return nil, false, fmt.Errorf("payload holds invalid embedded JSON: %w", err)
	}
	out, _, err := s.value(generic, depth)
	return out, true, err
}

// rawIsInert reports whether embedded JSON certainly needs no change: plain
// ASCII without backslashes cannot hold a NUL, a non-NFC string or a NaN,
// and every string in it appears literally in the bytes, so if no secret and
// no sensitive header name occurs in the bytes, none occurs in any string.
func (s *scrubber) rawIsInert(r []byte) bool {
	if !isPlainASCII(r) || bytes.IndexByte(r, '\\') >= 0 {
		return false
	}
	if containsFoldASCII(r, "cookie") || containsFoldASCII(r, "authorization") {
		return false
	}
	return !s.mask.MayOccur(r)
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
func (s *scrubber) reflected(v any, depth int) (any, bool, error) {
	j, err := json.Marshal(v)
	if err != nil {
		var uve *json.UnsupportedValueError
		if errors.As(err, &uve) && (uve.Str == "NaN" || strings.HasSuffix(uve.Str, "Inf")) {
			return nil, false, ErrNaNOrInf
		}
		return nil, false, fmt.Errorf("payload value of type %T cannot be encoded as JSON: %w", v, err)
	}
	generic, err := decodeGeneric(j)
	if err != nil {
		return nil, false, fmt.Errorf("payload value of type %T cannot be encoded as JSON: %w", v, err)
	}
	out, _, err := s.value(generic, depth)
	return out, true, err
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
func checkString(s string) error {
	if i := plainPrefix(s); i < len(s) {
		return checkRest(s, i)
	}
	return nil
}

// plainPrefix is the length of the leading run of s that is printable
// ASCII: bytes that break no rule.
func plainPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < utf8.RuneSelf {
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
