package starlark

import (
	"math"
	"strconv"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// The sizes below are upper bounds on what the interpreter allocates for a
// value, in bytes, on a 64-bit machine: a slot of a list or tuple is an
// interface (16), a string or bytes value its bytes plus a boxed header
// (16), a dict entry its key, value, hash and links (about 64).
const (
	slotSize   = 16
	boxSize    = 16
	entrySize  = 64
	tupleExtra = 24 // a tuple or list header
	pairSize   = slotSize + 2*slotSize + tupleExtra
)

// sat adds and multiplies byte counts without overflowing.
func sat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// intBytes is the size of an int's magnitude (small ints: 0, they live in
// the interface).
func intBytes(v starlark.Int) int64 {
	if _, ok := v.Int64(); ok {
		return 0
	}
	return int64(v.BigInt().BitLen()+7)/8 + 32
}

// seqLen is how many elements iterating v yields: its length when it has
// one, else it is counted, stopping past limit (then limit+1).
func seqLen(v starlark.Value, limit int64) int64 {
	if n := starlark.Len(v); n >= 0 {
		return int64(n)
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return 0
	}
	iter := it.Iterate()
	defer iter.Done()
	var n int64
	var x starlark.Value
	for iter.Next(&x) {
		if n++; n > limit {
			break
		}
	}
	return n
}

// quotedSize bounds the bytes a string takes quoted (repr, json.encode):
// printable characters as they are, the others escaped, at most four bytes
// of escape per byte.
func quotedSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n += 2
			case c >= 0x20 && c < 0x7f:
				n++
			default:
				n += 6 // \u0000 in JSON, \x00 in repr
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && strconv.IsPrint(r) {
			n += int64(w)
		} else {
			n += 10 * int64(w)
		}
		i += w
	}
	return n
}

// tupleKey identifies a tuple by its elements (tuples are not
// comparable; a slice of one shares its array).
type tupleKey struct {
	first *starlark.Value
	n     int
}

// textSizer bounds the text str, repr, json.encode and the formatting
// operators make of a value, counting a value reached twice twice (as the
// text repeats it), each distinct value walked once. It stops adding past
// limit.
type textSizer struct {
	limit int64
	memo  map[any]int64
	open  map[any]bool // the containers on the current path: a cycle
	// indent: with json.encode_indent, each element's line costs a
	// newline, the prefix and the indent once per depth.
	prefix, indent int64
}

func newTextSizer(limit int64) *textSizer {
	return &textSizer{limit: limit, memo: map[any]int64{}, open: map[any]bool{}}
}

// text is the size of repr(v) (str(v) of a string is its length: see
// strText).
func (ts *textSizer) text(v starlark.Value, depth int64) int64 {
	switch x := v.(type) {
	case starlark.String:
		return quotedSize(string(x))
	case starlark.Bytes:
		return quotedSize(string(x)) + 1
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return 20
		}
		return int64(x.BigInt().BitLen())*31/100 + 2
	case starlark.Float, starlark.Bool, starlark.NoneType:
		return 32
	case *starlark.List, starlark.Tuple, *starlark.Dict:
		return ts.container(x, depth)
	}
	if v.Type() == "range" {
		n := int64(starlark.Len(v))
		return sat(satMul(n, 24+ts.line(depth+1)), 32)
	}
	if it, ok := v.(starlark.Iterable); ok {
		if _, isAttrs := v.(starlark.HasAttrs); !isAttrs {
			return ts.iterable(it, depth)
		}
	}
	return 64
}

// line is the cost of one element's line under json.encode_indent.
func (ts *textSizer) line(depth int64) int64 {
	if ts.indent == 0 && ts.prefix == 0 {
		return 0
	}
	return 1 + ts.prefix + satMul(ts.indent, depth)
}

func (ts *textSizer) container(v starlark.Value, depth int64) int64 {
	key := any(v)
	if t, ok := v.(starlark.Tuple); ok {
		if len(t) == 0 {
			return 2
		}
		key = tupleKey{&t[0], len(t)}
	}
	if n, ok := ts.memo[key]; ok {
		return n
	}
	if ts.open[key] {
		return 8 // a cycle is written [...]
	}
	ts.open[key] = true
	defer delete(ts.open, key)
	n := int64(2) + ts.line(depth)
	switch x := v.(type) {
	case *starlark.List:
		for i := 0; i < x.Len() && n <= ts.limit; i++ {
			n = sat(n, ts.text(x.Index(i), depth+1)+2+ts.line(depth+1))
		}
	case starlark.Tuple:
		for _, e := range x {
			if n > ts.limit {
				break
			}
			n = sat(n, ts.text(e, depth+1)+2+ts.line(depth+1))
		}
	case *starlark.Dict:
		for _, kv := range x.Items() {
			if n > ts.limit {
				break
			}
			n = sat(n, sat(ts.text(kv[0], depth+1), ts.text(kv[1], depth+1))+4+ts.line(depth+1))
		}
	}
	ts.memo[key] = n
	return n
}

func (ts *textSizer) iterable(it starlark.Iterable, depth int64) int64 {
	iter := it.Iterate()
	defer iter.Done()
	n := int64(2)
	var x starlark.Value
	for n <= ts.limit && iter.Next(&x) {
		n = sat(n, ts.text(x, depth+1)+2+ts.line(depth+1))
	}
	return n
}

// strText is the size of str(v): a string's own bytes, repr for the rest.
func (ts *textSizer) strText(v starlark.Value) int64 {
	if s, ok := v.(starlark.String); ok {
		return int64(len(s))
	}
	return ts.text(v, 0)
}

// goSizer bounds what converting a returned value to Go (toGo) makes: a
// value reached twice is converted twice.
type goSizer struct {
	limit int64
	memo  map[any]int64
}

func (gs *goSizer) size(v starlark.Value, depth int) int64 {
	if depth > maxDepth {
		return 0 // toGo refuses it
	}
	var key any
	switch x := v.(type) {
	case *starlark.List, *starlark.Dict:
		key = x
	case starlark.Tuple:
		if len(x) > 0 {
			key = tupleKey{&x[0], len(x)}
		}
	case starlark.String:
		return boxSize
	default:
		return slotSize
	}
	if key != nil {
		if n, ok := gs.memo[key]; ok {
			return n
		}
	}
	n := int64(tupleExtra)
	switch x := v.(type) {
	case *starlark.List:
		for i := 0; i < x.Len() && n <= gs.limit; i++ {
			n = sat(n, slotSize+gs.size(x.Index(i), depth+1))
		}
	case starlark.Tuple:
		for _, e := range x {
			if n > gs.limit {
				break
			}
			n = sat(n, slotSize+gs.size(e, depth+1))
		}
	case *starlark.Dict:
		for _, kv := range x.Items() {
			if n > gs.limit {
				break
			}
			n = sat(n, entrySize+gs.size(kv[1], depth+1))
		}
	}
	if key != nil {
		gs.memo[key] = n
	}
	return n
}

// goValueSize bounds what converting a Go value (a world value, an input)
// to Starlark makes.
func goValueSize(v any, limit int64) int64 {
	switch x := v.(type) {
	case string:
		return boxSize
	case []any:
		n := int64(tupleExtra)
		for _, e := range x {
			if n > limit {
				break
			}
			n = sat(n, slotSize+goValueSize(e, limit))
		}
		return n
	case map[string]any:
		n := int64(tupleExtra)
		for _, e := range x {
			if n > limit {
				break
			}
			n = sat(n, entrySize+boxSize+goValueSize(e, limit))
		}
		return n
	}
	return slotSize
}
