package story

import (
	"fmt"
	"math"
	"strings"
)

// Fits reports whether x may be the value of the world key: nil always
// does (the key is unset); otherwise int takes integral numbers, float any
// number, bool a bool, string a string, enum a listed value (compared by
// string form, as slot values are) or any scalar when none is listed,
// object/map a mapping and list/array a list. A key without a type, or with
// a type the loader warned about, takes anything.
func (v *WorldVar) Fits(x any) bool {
	if x == nil {
		return true
	}
	switch v.Type {
	case "int":
		switch n := x.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return true
		case float64: // a JSON number
			return n == math.Trunc(n) && !math.IsInf(n, 0)
		}
		return false
	case "float":
		switch x.(type) {
		case float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return true
		}
		return false
	case "bool":
		_, ok := x.(bool)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "enum":
		switch x.(type) {
		case map[string]any, []any:
			return false
		}
		if len(v.Values) == 0 {
			return true
		}
		s := fmt.Sprint(x)
		for _, val := range v.Values {
			if fmt.Sprint(val) == s {
				return true
			}
		}
		return false
	case "object", "map":
		_, ok := x.(map[string]any)
		return ok
	case "list", "array":
		_, ok := x.([]any)
		return ok
	}
	return true
}

// Takes says what the declared type takes, completing "... is not ": "an
// int", "one of small, large", "a JSON object".
func (v *WorldVar) Takes() string {
	switch v.Type {
	case "int":
		return "an int"
	case "float":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "enum":
		if len(v.Values) == 0 {
			return "a scalar"
		}
		parts := make([]string, len(v.Values))
		for i, val := range v.Values {
			parts[i] = fmt.Sprint(val)
		}
		return "one of " + strings.Join(parts, ", ")
	case "object", "map":
		return "a JSON object"
	case "list", "array":
		return "a JSON list"
	}
	return "anything"
}
