package jsonwire

import "encoding/json"

// A Field is one key of an object of known shape and where its value goes,
// by the type of To:
//
//	*string           a string
//	*int              an integral number within int's range
//	*json.RawMessage  any value but null, as its text
//	*map[string]any   an object as Object reads it, or null, which leaves
//	                  the map nil (as encoding/json leaves a map field)
//	func() bool       reads the value itself, false declining the input
//
// Anything else declines the input.
type Field struct {
	Key      string
	To       any
	Required bool
}

// Fields reads an object whose keys are among fields' Keys, spelled
// exactly so, each at most once, every Required one present, and each
// value of a kind its To takes. Anything else is false: another key or
// spelling (which encoding/json may match to a struct field without
// regard to case), a repeated key (encoding/json overwrites), a null
// (encoding/json leaves the field as it was), a missing required key.
// The fields are looked up in their order first, as kitsoki's encoder
// writes them; at most 64.
func (r *Reader) Fields(fields []Field) bool {
	if len(fields) > 64 {
		return false
	}
	if !r.Take('{') {
		return false
	}
	var seen uint64
	next := 0
	for first := true; ; first = false {
		key, more, ok := r.member(first)
		if !ok {
			return false
		}
		if !more {
			break
		}
		i := next
		if i >= len(fields) || fields[i].Key != key {
			for i = 0; i < len(fields) && fields[i].Key != key; i++ {
			}
			if i == len(fields) {
				return false
			}
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		next = i + 1
		if !r.Into(fields[i].To) {
			return false
		}
	}
	for i, f := range fields {
		if f.Required && seen&(1<<i) == 0 {
			return false
		}
	}
	return true
}

// Into reads one value into to, which is of a kind Field's To takes;
// false if the value is not of that kind.
func (r *Reader) Into(to any) bool {
	var ok bool
	switch to := to.(type) {
	case *string:
		*to, ok = r.String()
	case *int:
		*to, ok = r.Int()
	case *json.RawMessage:
		if r.Next() == 'n' {
			return false
		}
		var raw string
		raw, ok = r.Raw()
		*to = json.RawMessage(raw)
	case *map[string]any:
		if r.Null() {
			*to = nil
			return true
		}
		*to, ok = r.Object()
	case func() bool:
		ok = to()
	}
	return ok
}
