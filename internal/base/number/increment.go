package number

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Increment is the value an increment: effect of by leaves in a world key
// holding v: v read as an integer, plus by. v is read as a number (int,
// int8 to int64, uint to uint64, float32, float64, json.Number; a fraction
// is truncated toward zero) or as integer text ("3", " -2 "); anything else
// (nil, "3.5", "three", a map) counts 0.
//
// It is the one reading of an increment: the session applies it live,
// replaying a durable session's journal applies it again to the world read
// back (where a number stored as a string is still a string), and the
// trace views follow it, so all three agree.
func Increment(v any, by int64) int64 {
	return counter(v) + by
}

func counter(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint:
		return int64(n)
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return int64(n)
	case float32:
		return int64(n)
	case float64:
		return int64(n)
	case json.Number:
		i, _ := Int(n)
		return i
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil {
			return i
		}
	}
	return 0
}
