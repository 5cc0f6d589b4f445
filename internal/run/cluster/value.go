package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Value carries a world, a call's arguments or its result data through
// Temporal's JSON payloads without losing Go types: a plain JSON round
// trip turns every int into a float64 and every json.Number into one too,
// and a template renders 3 and 3.0 differently. Each node is written as a
// two-element array [tag, value]: "z" nil, "b" bool, "s" string, "i" int,
// "I" int64, "f" float64 (as its shortest decimal text, with "NaN", "+Inf",
// "-Inf"), "n" json.Number, "m" map[string]any, "a" []any. Any other type
// is written as its own JSON ("j") and comes back as plain JSON values.
type Value struct{ V any }

// MarshalJSON writes the tagged form.
func (v Value) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := encodeValue(&b, v.V); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalJSON reads the tagged form.
func (v *Value) UnmarshalJSON(data []byte) error {
	var raw json.RawMessage = data
	out, err := decodeValue(raw)
	if err != nil {
		return fmt.Errorf("cluster value: %w", err)
	}
	v.V = out
	return nil
}

// Map returns the value as a map (nil when it is not one).
func (v Value) Map() map[string]any {
	m, _ := v.V.(map[string]any)
	return m
}

func encodeValue(b *bytes.Buffer, v any) error {
	tagged := func(tag string, x any) error {
		j, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.WriteString(`["` + tag + `",`)
		b.Write(j)
		b.WriteByte(']')
		return nil
	}
	switch x := v.(type) {
	case nil:
		b.WriteString(`["z"]`)
		return nil
	case bool:
		return tagged("b", x)
	case string:
		return tagged("s", x)
	case int:
		return tagged("i", strconv.Itoa(x))
	case int64:
		return tagged("I", strconv.FormatInt(x, 10))
	case float64:
		return tagged("f", strconv.FormatFloat(x, 'g', -1, 64))
	case json.Number:
		return tagged("n", string(x))
	case map[string]any:
		b.WriteString(`["m",{`)
		first := true
		for _, k := range sortedKeys(x) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			kj, _ := json.Marshal(k)
			b.Write(kj)
			b.WriteByte(':')
			if err := encodeValue(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteString("}]")
		return nil
	case []any:
		b.WriteString(`["a",[`)
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeValue(b, e); err != nil {
				return err
			}
		}
		b.WriteString("]]")
		return nil
	default:
		return tagged("j", x)
	}
}

func decodeValue(raw json.RawMessage) (any, error) {
	var node []json.RawMessage
	if err := json.Unmarshal(raw, &node); err != nil || len(node) == 0 {
		return nil, fmt.Errorf("want a [tag, value] node, got %.40s", raw)
	}
	var tag string
	if err := json.Unmarshal(node[0], &tag); err != nil {
		return nil, fmt.Errorf("node tag: %w", err)
	}
	if tag == "z" {
		return nil, nil
	}
	if len(node) != 2 {
		return nil, fmt.Errorf("node %q: want 2 elements, got %d", tag, len(node))
	}
	body := node[1]
	text := func() (string, error) {
		var s string
		err := json.Unmarshal(body, &s)
		return s, err
	}
	switch tag {
	case "b":
		var x bool
		err := json.Unmarshal(body, &x)
		return x, err
	case "s":
		return text()
	case "i", "I", "f", "n":
		s, err := text()
		if err != nil {
			return nil, err
		}
		switch tag {
		case "i":
			return strconv.Atoi(s)
		case "I":
			return strconv.ParseInt(s, 10, 64)
		case "f":
			return strconv.ParseFloat(s, 64)
		}
		return json.Number(s), nil
	case "m":
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(fields))
		for _, k := range sortedKeys(fields) {
			v, err := decodeValue(fields[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = v
		}
		return out, nil
	case "a":
		var elems []json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil {
			return nil, err
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			v, err := decodeValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = v
		}
		return out, nil
	case "j":
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		var x any
		err := d.Decode(&x)
		return x, err
	}
	return nil, fmt.Errorf("unknown node tag %q", tag)
}
