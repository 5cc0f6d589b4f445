// Package jsonwire reads JSON in one pass with encoding/json's meaning.
// It is the one hand-written JSON reader of kitsoki: schema.Decode reads
// agents' submissions with it, and the subprocess wire (wire-protocols.md
// §4) decodes its hot messages with it, the agent.ask request a plugin
// decodes and the response kitsoki decodes. encoding/json validates a
// message in a pass of its own and then decodes it by reflection, which
// for a 1 KB request costs more than the pipe round trip.
//
// A Reader only ever takes what encoding/json would take, with the same
// result; whatever it does not handle (invalid JSON, a number its
// NumberFunc declines, an unpaired surrogate escape, deep nesting) makes
// it report false, and its callers then decode the input with
// encoding/json, which words the error. Input must be valid UTF-8 (the
// line framing, or the caller, checks it before anything is decoded).
package jsonwire

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting Value follows; deeper values are declined
// (encoding/json has its own limit).
const MaxDepth = 1000

// NumberFunc makes the value of a number literal of JSON's grammar;
// integral says it has neither fraction nor exponent. False declines the
// input.
type NumberFunc func(lit string, integral bool) (any, bool)

// Float64 is encoding/json's number in an interface{}: a float64, and a
// number beyond float64's range declined (encoding/json refuses it). It
// is what a Reader uses unless told otherwise.
func Float64(lit string, _ bool) (any, bool) {
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}

// Scratch is the space a Reader gathers the members and elements of the
// objects and arrays it is reading in, so that each map and slice is made
// at its final size, which pays for larger documents (a map past eight
// keys is not grown twice); the space itself is an allocation of 640
// bytes, more than a small message's maps cost grown as they are filled,
// which is what a Reader without one does.
type Scratch struct {
	members [16]member
	elems   [8]any
}

type member struct {
	key string
	val any
}

// Reader reads JSON values from a string, front to back.
type Reader struct {
	s       string
	i       int
	number  NumberFunc
	gather  bool     // objects and arrays are gathered in members and elems
	members []member // the members of the objects being read, innermost last
	elems   []any    // the same for arrays
}

// NewReader returns a Reader of s gathering in sc (nil: filling each map
// and slice as it reads) and making numbers with number (nil: Float64).
func NewReader(s string, sc *Scratch, number NumberFunc) Reader {
	r := Reader{s: s, number: number}
	if sc != nil {
		r.gather, r.members, r.elems = true, sc.members[:0], sc.elems[:0]
	}
	if number == nil {
		r.number = Float64
	}
	return r
}

// Pos is the offset of the next byte to read.
func (r *Reader) Pos() int { return r.i }

func (r *Reader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Next skips whitespace and reports the next byte, 0 at the end.
func (r *Reader) Next() byte {
	r.space()
	if r.i >= len(r.s) {
		return 0
	}
	return r.s[r.i]
}

// Take skips whitespace and consumes c if it comes next.
func (r *Reader) Take(c byte) bool {
	if r.Next() != c {
		return false
	}
	r.i++
	return true
}

// End reports whether only whitespace is left.
func (r *Reader) End() bool { return r.Next() == 0 && r.i == len(r.s) }

// Members reads an object, calling member with each key while the Reader
// stands before the member's value, which member must read; false if the
// input is not such an object or member returns false.
func (r *Reader) Members(member func(key string) bool) bool {
	if !r.Take('{') {
		return false
	}
	for first := true; ; first = false {
		key, more, ok := r.member(first)
		if !ok || !more {
			return ok
		}
		if !member(key) {
			return false
		}
	}
}

// member reads what stands before the next member's value of an object
// whose { is read: a comma unless first, the key and its colon; more is
// false where the object closes instead.
func (r *Reader) member(first bool) (key string, more, ok bool) {
	c := r.Next()
	if c == '}' {
		r.i++
		return "", false, true
	}
	if !first {
		if c != ',' {
			return "", false, false
		}
		r.i++
		c = r.Next()
	}
	if c != '"' {
		return "", false, false
	}
	key, ok = r.String()
	if !ok || !r.Take(':') {
		return "", false, false
	}
	return key, true, true
}

// element reads what stands before the next element of an array whose [
// is read: a comma unless first; more is false where the array closes.
func (r *Reader) element(first bool) (more, ok bool) {
	switch r.Next() {
	case ']':
		r.i++
		return false, true
	case ',':
		if first {
			return false, false
		}
		r.i++
		return true, true
	}
	return true, first
}

// String reads a string literal, decoding escapes as encoding/json does.
// One without escapes shares the input's memory.
func (r *Reader) String() (string, bool) {
	if !r.Take('"') {
		return "", false
	}
	start := r.i
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == '"':
			s := r.s[start:r.i]
			r.i++
			return s, true
		case c == '\\':
			return r.escaped(start)
		case c < 0x20:
			return "", false
		default:
			r.i++
		}
	}
	return "", false
}

// escaped finishes a string from start whose first escape is at r.i.
func (r *Reader) escaped(start int) (string, bool) {
	var b strings.Builder
	b.Grow(r.i - start + 16)
	b.WriteString(r.s[start:r.i])
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == '"':
			r.i++
			return b.String(), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.s) {
			return "", false
		}
		e := r.s[r.i+1]
		r.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			ch, ok := r.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(ch) {
				// Only a valid pair is taken; encoding/json's
				// replacements for the rest are its own.
				if !strings.HasPrefix(r.s[r.i:], `\u`) {
					return "", false
				}
				r.i += 2
				lo, ok := r.hex4()
				if !ok {
					return "", false
				}
				if ch = utf16.DecodeRune(ch, lo); ch == utf8.RuneError {
					return "", false
				}
			}
			b.WriteRune(ch)
		default:
			return "", false
		}
	}
	return "", false
}

// skipString reads a string literal without decoding it: any escape of
// JSON's grammar is taken, whatever it stands for.
func (r *Reader) skipString() bool {
	r.i++ // "
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == '"':
			r.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if r.i+1 >= len(r.s) {
				return false
			}
			switch r.s[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				r.i += 2
				if _, ok := r.hex4(); !ok {
					return false
				}
			default:
				return false
			}
		default:
			r.i++
		}
	}
	return false
}

func (r *Reader) hex4() (rune, bool) {
	if r.i+4 > len(r.s) {
		return 0, false
	}
	var ch rune
	for _, c := range []byte(r.s[r.i : r.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		ch = ch<<4 | rune(c)
	}
	r.i += 4
	return ch, true
}

// literalNumber reads a number literal of JSON's grammar and returns its
// text and whether it is integral (no fraction, no exponent).
func (r *Reader) literalNumber() (lit string, integral, ok bool) {
	r.space()
	start := r.i
	if r.i < len(r.s) && r.s[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.s) && r.s[r.i] == '0':
		r.i++
	case r.i < len(r.s) && r.s[r.i] >= '1' && r.s[r.i] <= '9':
		r.digits()
	default:
		return "", false, false
	}
	integral = true
	if r.i < len(r.s) && r.s[r.i] == '.' {
		integral = false
		r.i++
		if !r.digits() {
			return "", false, false
		}
	}
	if r.i < len(r.s) && (r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		integral = false
		r.i++
		if r.i < len(r.s) && (r.s[r.i] == '+' || r.s[r.i] == '-') {
			r.i++
		}
		if !r.digits() {
			return "", false, false
		}
	}
	return r.s[start:r.i], integral, true
}

// digits reads one or more decimal digits; false if there are none.
func (r *Reader) digits() bool {
	start := r.i
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}

// Int reads a number into an int, as encoding/json decodes one into an
// int field: integral literals only, within int's range.
func (r *Reader) Int() (int, bool) {
	lit, integral, ok := r.literalNumber()
	if !ok || !integral {
		return 0, false
	}
	n, err := strconv.ParseInt(lit, 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// Null consumes null if it comes next.
func (r *Reader) Null() bool { return r.literal("null") }

func (r *Reader) literal(word string) bool {
	r.space()
	if !strings.HasPrefix(r.s[r.i:], word) {
		return false
	}
	r.i += len(word)
	return true
}

// Value reads any value as encoding/json decodes one into an interface{}:
// objects map[string]any (a repeated key keeps its last value), arrays
// []any, numbers as the Reader's NumberFunc makes them, strings, bools
// and nil.
func (r *Reader) Value() (any, bool) { return r.value(0) }

func (r *Reader) value(depth int) (any, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	switch c := r.Next(); {
	case c == '{':
		return r.object(depth)
	case c == '[':
		return r.array(depth)
	case c == '"':
		return r.String()
	case c == 't':
		return true, r.literal("true")
	case c == 'f':
		return false, r.literal("false")
	case c == 'n':
		return nil, r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, integral, ok := r.literalNumber()
		if !ok {
			return nil, false
		}
		return r.number(lit, integral)
	}
	return nil, false
}

func (r *Reader) object(depth int) (any, bool) {
	r.i++ // {
	if !r.gather {
		m := map[string]any{}
		for first := true; ; first = false {
			key, more, ok := r.member(first)
			if !ok || !more {
				return m, ok
			}
			if m[key], ok = r.value(depth + 1); !ok {
				return nil, false
			}
		}
	}
	base := len(r.members)
	defer func() { r.members = r.members[:base] }()
	for first := true; ; first = false {
		key, more, ok := r.member(first)
		if !ok {
			return nil, false
		}
		if !more {
			ms := r.members[base:]
			m := make(map[string]any, len(ms))
			for _, e := range ms { // in order: a repeated key keeps its last value
				m[e.key] = e.val
			}
			clear(ms) // drop the references the scratch space would keep
			return m, true
		}
		val, ok := r.value(depth + 1)
		if !ok {
			return nil, false
		}
		r.members = append(r.members, member{key, val})
	}
}

func (r *Reader) array(depth int) (any, bool) {
	r.i++ // [
	if !r.gather {
		a := []any{}
		for first := true; ; first = false {
			more, ok := r.element(first)
			if !ok || !more {
				return a, ok
			}
			val, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, val)
		}
	}
	base := len(r.elems)
	defer func() { r.elems = r.elems[:base] }()
	for first := true; ; first = false {
		more, ok := r.element(first)
		if !ok {
			return nil, false
		}
		if !more {
			es := r.elems[base:]
			a := make([]any, len(es))
			copy(a, es)
			clear(es)
			return a, true
		}
		val, ok := r.value(depth + 1)
		if !ok {
			return nil, false
		}
		r.elems = append(r.elems, val)
	}
}

// Object reads an object into a map[string]any as Value does.
func (r *Reader) Object() (map[string]any, bool) {
	if r.Next() != '{' {
		return nil, false
	}
	v, ok := r.value(0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

// Raw reads one value and returns its text as it stands in the input,
// which is what encoding/json hands a json.RawMessage.
func (r *Reader) Raw() (string, bool) {
	r.space()
	start := r.i
	if !r.skip(0) {
		return "", false
	}
	return r.s[start:r.i], true
}

// skip reads one value without building it.
func (r *Reader) skip(depth int) bool {
	if depth > MaxDepth {
		return false
	}
	switch c := r.Next(); {
	case c == '{':
		return r.Members(func(string) bool { return r.skip(depth + 1) })
	case c == '[':
		r.i++
		for first := true; ; first = false {
			more, ok := r.element(first)
			if !ok || !more {
				return ok
			}
			if !r.skip(depth + 1) {
				return false
			}
		}
	case c == '"':
		return r.skipString()
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, ok := r.literalNumber()
		return ok
	}
	return false
}
