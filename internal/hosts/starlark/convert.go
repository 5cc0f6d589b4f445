package starlark

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"

	"go.starlark.net/starlark"
)

// maxDepth bounds the nesting of a value crossing the boundary.
const maxDepth = 64

// toStarlark converts a kitsoki value (what YAML, JSON and templates make)
// to Starlark. Maps become dicts with sorted keys.
func toStarlark(v any, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case string:
		return starlark.String(x), nil
	case int:
		return starlark.MakeInt(x), nil
	case int64:
		return starlark.MakeInt64(x), nil
	case int32:
		return starlark.MakeInt64(int64(x)), nil
	case uint64:
		return starlark.MakeUint64(x), nil
	case float64:
		return starlark.Float(x), nil
	case float32:
		return starlark.Float(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return starlark.MakeInt64(i), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return starlark.Float(f), nil
	case []any:
		out := make([]starlark.Value, len(x))
		for i, e := range x {
			sv, err := toStarlark(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = sv
		}
		return starlark.NewList(out), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := starlark.NewDict(len(x))
		for _, k := range keys {
			sv, err := toStarlark(x[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("a %T cannot be handed to a script", v)
}

// toGo converts a Starlark value back: None → nil, ints → int64 (float64
// beyond int64), floats → float64, lists and tuples → []any, dicts with
// string keys → map[string]any. Anything else (a function, a set, ctx) is
// an error naming its type.
func toGo(v starlark.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.String:
		return string(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		f, _ := new(big.Float).SetInt(x.BigInt()).Float64()
		return f, nil
	case starlark.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the float %v has no JSON form", f)
		}
		return f, nil
	case *starlark.List:
		out := make([]any, x.Len())
		for i := range x.Len() {
			g, err := toGo(x.Index(i), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = g
		}
		return out, nil
	case starlark.Tuple:
		out := make([]any, len(x))
		for i, e := range x {
			g, err := toGo(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = g
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, x.Len())
		for _, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s; keys must be strings", kv[0].String(), kv[0].Type())
			}
			g, err := toGo(kv[1], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", string(k), err)
			}
			out[string(k)] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s cannot leave the script (return strings, numbers, bools, None, lists and dicts)", v.Type())
}
