package driver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// LineOf writes an intent and its slots as a typed line that reads back
// to the same values ("greet name=Ada style=formal"); ok is false when a
// value cannot be written so (it holds both kinds of quote, or a line
// break), and the line is then "".
func LineOf(intent string, slots map[string]any) (string, bool) {
	parts := []string{intent}
	for _, k := range slices.Sorted(maps.Keys(slots)) {
		v, ok := slotText(slots[k])
		if !ok {
			return "", false
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " "), true
}

// slotText is a slot value as a line writes it, quoted when it holds a
// blank or a quote.
func slotText(x any) (string, bool) {
	var v string
	switch x := x.(type) {
	case string:
		v = x
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return "", false
		}
		v = string(b)
	default:
		v = fmt.Sprint(x)
	}
	switch {
	case strings.ContainsAny(v, "\n\r"):
		return "", false
	case v != "" && !strings.ContainsAny(v, " \t'\""):
		return v, true
	case !strings.Contains(v, `"`):
		return `"` + v + `"`, true
	case !strings.Contains(v, "'"):
		return "'" + v + "'", true
	}
	return "", false
}
