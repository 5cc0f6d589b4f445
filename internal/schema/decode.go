package schema

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeFast is Decode's own parser for the common case: it builds the
// same values DecodeStandard builds (objects map[string]any, arrays []any,
// integral numbers int64 when they fit and float64 otherwise, numbers
// beyond float64 as their text) from one string conversion of the input,
// keys and unescaped strings sharing it, each object's map made at its
// final size. It accepts only what encoding/json accepts and takes the
// same meaning from it; ok is false for anything it does not handle
// (invalid JSON, invalid UTF-8, an unpaired surrogate escape, very deep
// nesting), and Decode then asks encoding/json, which words the error.
func decodeFast(b []byte) (v any, ok bool) {
	if !utf8.Valid(b) {
		return nil, false
	}
	// Scratch space for the members and elements being read: on the
	// stack, so only a larger document grows it onto the heap.
	var members [16]member
	var elems [8]any
	d := fastDecoder{s: string(b), members: members[:0], elems: elems[:0]}
	d.skipSpace()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.skipSpace()
	if d.i != len(d.s) {
		return nil, false
	}
	return v, true
}

// maxFastDepth bounds the nesting decodeFast follows; deeper documents
// go to encoding/json, which has its own limit.
const maxFastDepth = 1000

type member struct {
	key string
	val any
}

type fastDecoder struct {
	s       string
	i       int
	members []member // the members of the objects being read, innermost last
	elems   []any    // the same for arrays
}

func (d *fastDecoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(word string) bool {
	if !strings.HasPrefix(d.s[d.i:], word) {
		return false
	}
	d.i += len(word)
	return true
}

func (d *fastDecoder) object(depth int) (any, bool) {
	d.i++ // {
	base := len(d.members)
	defer func() { d.members = d.members[:base] }()
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return map[string]any{}, true
	}
	for {
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		key, ok := d.str()
		if !ok {
			return nil, false
		}
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.skipSpace()
		val, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		d.members = append(d.members, member{key, val})
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			continue
		case '}':
			d.i++
			ms := d.members[base:]
			m := make(map[string]any, len(ms))
			for _, e := range ms { // in order: a repeated key keeps its last value
				m[e.key] = e.val
			}
			clear(ms) // drop the references the scratch space would keep
			return m, true
		}
		return nil, false
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // [
	base := len(d.elems)
	defer func() { d.elems = d.elems[:base] }()
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return []any{}, true
	}
	for {
		d.skipSpace()
		val, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		d.elems = append(d.elems, val)
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			continue
		case ']':
			d.i++
			es := d.elems[base:]
			a := make([]any, len(es))
			copy(a, es)
			clear(es)
			return a, true
		}
		return nil, false
	}
}

// str reads a string literal. One without escapes is a substring of the
// input; escapes are decoded as encoding/json decodes them.
func (d *fastDecoder) str() (string, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			s := d.s[start:d.i]
			d.i++
			return s, true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		default:
			d.i++
		}
	}
	return "", false
}

// escaped finishes a string from start whose first escape is at d.i.
func (d *fastDecoder) escaped(start int) (string, bool) {
	var b strings.Builder
	b.Grow(d.i - start + 16)
	b.WriteString(d.s[start:d.i])
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return b.String(), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			return "", false
		}
		e := d.s[d.i+1]
		d.i += 2
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
			r, ok := d.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// Only a valid pair is taken here; encoding/json's
				// replacement rules for the rest are its own.
				if !strings.HasPrefix(d.s[d.i:], `\u`) {
					return "", false
				}
				d.i += 2
				r2, ok := d.hex4()
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return "", false
}

func (d *fastDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(d.s[d.i : d.i+4]) {
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
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// number reads a number literal of JSON's grammar and converts it as
// normalize converts a json.Number.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && d.s[d.i] >= '1' && d.s[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	integral := true
	if d.i < len(d.s) && d.s[d.i] == '.' {
		integral = false
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		integral = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	lit := d.s[start:d.i]
	if integral {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return lit, true
	}
	return f, true
}

// digits reads one or more decimal digits; false if there are none.
func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
