package orchestrator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// ParseInput reads a typed line "intent key=value key2='two words' ..."
// into an intent name and slots. Values are typed by the slot declaration
// when it has one (int, float, bool), else kept as strings; a value in
// single or double quotes may contain spaces.
func (s *Session) ParseInput(line string) (string, map[string]any, error) {
	fields, err := splitFields(line)
	if err != nil {
		return "", nil, err
	}
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("empty input: type an intent name, then key=value slots")
	}
	intent := fields[0]
	if strings.Contains(intent, "=") {
		return "", nil, fmt.Errorf("%q: the line must start with an intent name", intent)
	}
	def := s.intentDef(intent)
	slots := map[string]any{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("%q: slots are written key=value", f)
		}
		var sl *story.Slot
		if def != nil {
			sl = def.Slots[k]
		}
		slots[k] = TypedValue(slotType(sl), v)
	}
	return intent, slots, nil
}

func slotType(sl *story.Slot) string {
	if sl == nil {
		return ""
	}
	return sl.Type
}

// TypedValue converts a typed-in string to the declared type: int, float,
// bool, and JSON for object/map/list/array. Values that do not parse stay
// strings (the story's own validation has the last word).
func TypedValue(typ, v string) any {
	switch typ {
	case "int":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	case "float":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	case "bool":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	case "object", "map", "list", "array":
		var out any
		if err := json.Unmarshal([]byte(v), &out); err == nil {
			return out
		}
		if typ == "list" {
			// Typed in as a,b,c.
			parts := strings.Split(v, ",")
			items := make([]any, 0, len(parts))
			for _, p := range parts {
				if p = strings.TrimSpace(p); p != "" {
					items = append(items, p)
				}
			}
			return items
		}
	}
	return v
}

// splitFields splits on spaces, honouring single and double quotes.
func splitFields(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var quote rune
	inField := false
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inField = r, true
		case unicode.IsSpace(r):
			if inField {
				out = append(out, cur.String())
				cur.Reset()
				inField = false
			}
		default:
			cur.WriteRune(r)
			inField = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, line)
	}
	if inField {
		out = append(out, cur.String())
	}
	return out, nil
}
