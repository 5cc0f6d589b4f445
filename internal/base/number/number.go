// Package number reads numbers out of decoded values: what a JSON or YAML
// decoder, a trace reader (json.Number) or Go code put into a map[string]any.
//
// The types read are int, int64, float64 and json.Number; anything else
// (strings included) is not a number. Each function says whether it found
// one, so a caller can tell a missing or mistyped value from a zero.
// Increment is the one exception: the reading of an increment: effect,
// which also takes integer text and counts anything else 0.
package number

import (
	"encoding/json"
	"math"
)

// Float is v as a float64.
func Float(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Int is v as an int64; a fraction is truncated toward zero (a float64,
// or a json.Number that is not integer text).
func Int(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		f, err := n.Float64()
		return int64(f), err == nil
	}
	return 0, false
}

// maxExact is the largest magnitude below which every whole float64 is
// exactly an integer (2^53).
const maxExact = 1 << 53

// Whole is v as an int64 when it is a whole number: an int, an int64, a
// float64 with no fraction and magnitude below 2^53, or json.Number
// integer text. 3.0 is whole; 3.5 is not.
func Whole(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), n == math.Trunc(n) && math.Abs(n) < maxExact
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return Int(v)
}
