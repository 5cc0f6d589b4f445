package trace

import (
	"reflect"
	"slices"
	"strconv"
	"unsafe"
)

// object writes a JSON object with keys sorted like encoding/json does.
// Keys are checked and masked (Masker.Key: long secrets only); sensitive
// header names get their value replaced whatever it is. parent is the key
// the object is written under (a typed field's name, the key of the
// enclosing map; "" for a payload), which together with the depth and the
// number of keys says which remembered shape the object may have.
//
// A map met again in the same payload (the same map, at the same depth) is
// written as a copy of its first encoding: nothing can change it while one
// payload is encoded (that would be a data race), and masking is the same
// throughout. The record is per payload, so a map changed between two
// lines is walked afresh.
//
// Otherwise the map is written by its remembered shape when it has one
// (known), and else (sorted) by ranging over it and sorting its keys,
// which then become the shape remembered for the next such object.
func (e *payloadEncoder) object(b []byte, m map[string]any, depth int, parent string) ([]byte, error) {
	if len(m) == 0 {
		return append(b, "{}"...), nil
	}
	var id unsafe.Pointer
	if len(m) >= memoMinKeys {
		id = reflect.ValueOf(m).UnsafePointer()
		for _, s := range e.seen {
			if s.id == id && s.depth == depth {
				return append(b, b[s.start:s.end]...), nil
			}
		}
	}
	start, seenAt := len(b), len(e.seen)
	var sh *shape
	if len(m) <= maxShapeKeys {
		var known bool
		if sh, known = e.shapes.find(parent, depth, len(m)); known {
			if out, ok := e.known(b, m, depth, sh); ok {
				b = out
				goto written
			}
			// Other keys, or a value the rules refuse: the map is
			// written afresh, which also words any error as always.
			clear(e.seen[seenAt:])
			e.seen = e.seen[:seenAt]
			b = b[:start]
		}
	}
	{
		var err error
		if b, err = e.sorted(b, m, depth, parent, sh); err != nil {
			return nil, err
		}
	}
written:
	if id != nil && len(e.seen) < memoMax {
		e.seen = append(e.seen, seenObject{id: id, depth: depth, start: start, end: len(b)})
	}
	return b, nil
}

// known writes m by the shape sh, which has as many keys as m. It fails
// (ok false, b to be cut back) as soon as one of sh's keys is not in m, so
// m then has other keys, or a value fails the rules.
func (e *payloadEncoder) known(b []byte, m map[string]any, depth int, sh *shape) (_ []byte, ok bool) {
	sh.busy++
	b, ok = e.fromShape(b, m, depth, sh)
	sh.busy--
	return b, ok
}

func (e *payloadEncoder) fromShape(b []byte, m map[string]any, depth int, sh *shape) (_ []byte, ok bool) {
	b = append(b, '{')
	n := 0
	for i := range sh.keys {
		k := &sh.keys[i]
		v, ok := m[k.in]
		if !ok {
			return b, false
		}
		if k.skip {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, k.enc...)
		if k.sensitive {
			b = append(b, `"`+Redacted+`"`...)
			continue
		}
		// The common leaves here; everything else (and a string to mask
		// or escape) through value.
		switch x := v.(type) {
		case string:
			if e.mask == nil && plainPrefix(x) == len(x) {
				b = append(b, '"')
				b = append(b, x...)
				b = append(b, '"')
				continue
			}
		case bool:
			b = strconv.AppendBool(b, x)
			continue
		case int64:
			b = strconv.AppendInt(b, x, 10)
			continue
		case nil:
			b = append(b, "null"...)
			continue
		}
		var err error
		if b, err = e.value(b, v, depth+1, k.in); err != nil {
			return b, false
		}
	}
	return append(b, '}'), true
}

type mapEntry struct {
	out   string // key as written (masked)
	in    string // key in the caller's map
	v     any
	plain bool // out is written as it is, between quotes
	// enc0, enc1 delimit the written key (quoted, with its colon) in the
	// output.
	enc0, enc1 int
}

// objScratch is the scratch space of the objects written at one depth:
// their entries in map order, and the order to write them in.
type objScratch struct {
	entries []mapEntry
	order   []sortKey
}

// sortKey places one entry (entries[i]) of an object: p is its written
// key's first eight bytes, which decide most comparisons.
type sortKey struct {
	p uint64
	i int
}

// sorted writes m by ranging over it and sorting its keys, and, when sh
// is not nil, remembers its keys there.
func (e *payloadEncoder) sorted(b []byte, m map[string]any, depth int, parent string, sh *shape) ([]byte, error) {
	for len(e.objs) <= depth {
		e.objs = append(e.objs, objScratch{})
	}
	sc := &e.objs[depth]
	entries, order := sc.entries[:0], sc.order[:0]
	for k, v := range m {
		plain, err := checkKey(k)
		if err != nil {
			clear(entries)
			// Named by position-free text, never by content: the key
			// itself could be a secret.
			return nil, withSeg(err, "{key}")
		}
		order = append(order, sortKey{p: keyPrefix(k), i: len(entries)})
		entries = append(entries, mapEntry{out: k, in: k, v: v, plain: plain})
	}
	masked := false
	if e.mask != nil {
		for i := range entries {
			if out := e.mask.Key(entries[i].in); out != entries[i].in {
				entries[i].out, entries[i].plain, masked = out, false, true
				order[i].p = keyPrefix(out)
			}
		}
	}
	sortKeys(order, entries)
	// Keep the grown scratch for the next object (the nested objects
	// written below use the next depths' scratch).
	sc.entries, sc.order = entries, order
	b = append(b, '{')
	for n, o := range order {
		en := &entries[o.i]
		if n > 0 {
			if masked && en.out == entries[order[n-1].i].out {
				en.enc0, en.enc1 = -1, -1
				continue // two keys masked to the same text: keep one
			}
			b = append(b, ',')
		}
		en.enc0 = len(b)
		if en.plain {
			b = append(b, '"')
			b = append(b, en.out...)
			b = append(b, '"', ':')
		} else {
			b = appendJSONString(b, en.out)
			b = append(b, ':')
		}
		en.enc1 = len(b)
		if isSensitiveHeader(en.in) {
			b = append(b, `"`+Redacted+`"`...)
			continue
		}
		var err error
		if b, err = e.value(b, en.v, depth+1, en.in); err != nil {
			err = withSeg(err, "."+en.out)
			clear(entries)
			return nil, err
		}
	}
	b = append(b, '}')
	if sh != nil {
		e.shapes.remember(sh, parent, depth, b, order, entries)
	}
	clear(entries) // drop references to the caller's values
	return b, nil
}

// sortKeys puts an object's entries in the order encoding/json writes the
// redacted map in: by written key, then (two keys masked to the same
// text) by the caller's key. Objects are small: insertion sort up to
// smallObject entries, comparing the keys' first eight bytes first.
func sortKeys(order []sortKey, entries []mapEntry) {
	less := func(a, b sortKey) bool {
		if a.p != b.p {
			return a.p < b.p
		}
		ea, eb := &entries[a.i], &entries[b.i]
		if ea.out != eb.out {
			return ea.out < eb.out
		}
		return ea.in < eb.in
	}
	if len(order) > smallObject {
		slices.SortFunc(order, func(a, b sortKey) int {
			switch {
			case less(a, b):
				return -1
			case less(b, a):
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(order); i++ {
		o := order[i]
		if !less(o, order[i-1]) {
			continue
		}
		j := i
		for ; j > 0 && less(o, order[j-1]); j-- {
			order[j] = order[j-1]
		}
		order[j] = o
	}
}

// smallObject is the size up to which sortKeys sorts by insertion.
const smallObject = 24

// keyPrefix is the first eight bytes of k as a big-endian number (zeros
// after a shorter key): prefixes compare as the keys' first eight bytes
// do, and a key, which holds no NUL byte, sorts after its own prefix.
func keyPrefix(k string) uint64 {
	if len(k) >= 8 {
		return uint64(k[0])<<56 | uint64(k[1])<<48 | uint64(k[2])<<40 | uint64(k[3])<<32 |
			uint64(k[4])<<24 | uint64(k[5])<<16 | uint64(k[6])<<8 | uint64(k[7])
	}
	var p uint64
	for i := 0; i < len(k); i++ {
		p |= uint64(k[i]) << (56 - 8*i)
	}
	return p
}

// shapes remembers the keys of the objects written lately, each under the
// key it was written under, its depth and its number of keys: the next
// object found there (each decide's submission, with: arguments, world
// update) most likely has the same keys, and is then written by looking
// its values up in the remembered order, with no range over the map, no
// sort and no key checks. A shape is only used for a map with exactly its
// keys (as many keys, every one present), so a map with other keys is
// never written in a stale order. Two ways per set: objects of two shapes
// alternating under one key keep both.
type shapes struct {
	set [shapeSets][2]shape
}

const (
	shapeSets = 32
	// maxShapeKeys bounds the objects remembered, and so the memory held.
	maxShapeKeys = 32
)

// shape is an object's keys in the order they are written.
type shape struct {
	// str holds parent and every key (as in the map, then as written,
	// quoted and with its colon) in one string the shape owns, so a
	// remembered key never holds on to the caller's memory.
	str    string
	parent string
	depth  int
	keys   []shapeKey
	used   bool // the way used last of its set
	// busy counts the objects being written from this shape (known): a
	// nested object must not replace it under them.
	busy int
}

type shapeKey struct {
	in        string // the key as in the map
	enc       string // the key as written: quoted, masked, escaped, with its colon
	skip      bool   // masked to the same text as the key before: not written
	sensitive bool   // a sensitive header name: its value is always redacted
}

// find returns where the shape of an object of n keys under parent at
// depth is or goes, and whether it is there.
func (s *shapes) find(parent string, depth, n int) (*shape, bool) {
	set := &s.set[shapeSet(parent, depth, n)]
	for w := range set {
		sh := &set[w]
		if len(sh.keys) == n && sh.depth == depth && sh.parent == parent {
			set[w].used, set[1-w].used = true, false
			return sh, true
		}
	}
	// The way to replace: not the one used last, and never one an
	// enclosing object is being written from (nil when both are).
	w := 0
	if set[0].used && set[1].busy == 0 || set[0].busy > 0 {
		w = 1
	}
	if set[w].busy > 0 {
		return nil, false
	}
	set[w].used, set[1-w].used = true, false
	return &set[w], false
}

// shapeSet is the set of the shapes of n keys under parent at depth: a mix
// of the depth, the size and parent's length and end bytes (enough to tell
// apart the keys objects are written under).
func shapeSet(parent string, depth, n int) int {
	h := uint32(depth)*0x9E3779B1 ^ uint32(n)*0x85EBCA77 ^ uint32(len(parent))*0xC2B2AE35
	if len(parent) > 0 {
		h ^= (uint32(parent[0]) | uint32(parent[len(parent)-1])<<8) * 0x27D4EB2F
	}
	return int((h ^ h>>15) % shapeSets)
}

// remember makes sh the shape of the object just written into b by
// sorted, from its entries in written order.
func (s *shapes) remember(sh *shape, parent string, depth int, b []byte, order []sortKey, entries []mapEntry) {
	size := len(parent)
	for _, o := range order {
		en := &entries[o.i]
		size += len(en.in) + max(en.enc1-en.enc0, 0)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, parent...)
	for _, o := range order {
		en := &entries[o.i]
		buf = append(buf, en.in...)
		if en.enc0 >= 0 {
			buf = append(buf, b[en.enc0:en.enc1]...)
		}
	}
	str := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
	sh.str, sh.parent, sh.depth = str, str[:len(parent)], depth
	sh.keys = sh.keys[:0]
	at := len(parent)
	for _, o := range order {
		en := &entries[o.i]
		k := shapeKey{in: str[at : at+len(en.in)], sensitive: isSensitiveHeader(en.in)}
		at += len(en.in)
		if en.enc0 < 0 {
			k.skip = true
		} else {
			k.enc = str[at : at+en.enc1-en.enc0]
			at += en.enc1 - en.enc0
		}
		sh.keys = append(sh.keys, k)
	}
}
