package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// toText is how a value becomes text when it is spliced into a string, in
// value templates and text templates alike: nil is "", maps and lists are
// compact JSON with sorted keys, everything else is Go's %v.
func toText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return string(x)
	case map[string]any, []any:
		return compactJSON(x)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		if _, isBytes := v.([]byte); !isBytes {
			return compactJSON(v)
		}
	}
	return fmt.Sprintf("%v", v)
}

// compactJSON encodes v without HTML escaping or a trailing newline. Maps
// with non-string keys (as a YAML decoder may produce) are converted first;
// a value JSON cannot represent falls back to %v.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		if err := enc.Encode(jsonable(v)); err != nil {
			return fmt.Sprintf("%v", v)
		}
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// jsonable rewrites maps keyed by non-strings into map[string]any, deeply.
func jsonable(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			out[fmt.Sprint(it.Key().Interface())] = jsonable(it.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		if _, isBytes := v.([]byte); isBytes {
			return v
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = jsonable(rv.Index(i).Interface())
		}
		return out
	}
	return v
}

// truthy decides {{ if }} conditions: false, nil, zero numbers and empty
// strings, lists and maps are false; everything else is true.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case float64:
		return x != 0
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() != 0
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() > 0
	case reflect.Pointer, reflect.Interface:
		return !rv.IsNil()
	}
	return true
}

// Truthy is the {{ if }} rule for callers outside templates (view element
// when: guards): false, nil, zero numbers and empty strings, lists and maps
// are false.
func Truthy(v any) bool { return truthy(v) }
