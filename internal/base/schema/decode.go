package schema

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/kitsoki/kitsoki/internal/base/jsonwire"
)

// decodeFast is Decode's own parser for the common case, a jsonwire
// Reader: it builds the same values DecodeStandard builds (objects
// map[string]any, arrays []any, numbers as number makes them) from one
// string conversion of the input, keys and unescaped strings sharing it,
// each object's map made at its final size. It accepts only what
// encoding/json accepts and takes the same meaning from it; ok is false
// for anything it does not handle (invalid JSON, invalid UTF-8, an
// unpaired surrogate escape, nesting past jsonwire.MaxDepth), and Decode
// then asks encoding/json, which words the error.
func decodeFast(b []byte) (v any, ok bool) {
	if !utf8.Valid(b) {
		return nil, false
	}
	// Scratch space for the members and elements being read: on the
	// stack, so only a larger document grows it onto the heap.
	var sc jsonwire.Scratch
	r := jsonwire.NewReader(string(b), &sc, number)
	v, ok = r.Value()
	if !ok || !r.End() {
		return nil, false
	}
	return v, true
}

// number converts a number literal as normalize converts a json.Number:
// an integral one that fits int64 is an int64, any other a float64, and
// one beyond float64's range stays its text.
func number(lit string, integral bool) (any, bool) {
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
