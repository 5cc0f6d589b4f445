package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Timestamps are written as time.RFC3339Nano writes them in UTC, whatever
// came before: the kept second is only reused within that second.
func TestTimestampsFormatLikeRFC3339Nano(t *testing.T) {
	base := time.Date(2026, 12, 1, 18, 41, 55, 306466724, time.UTC)
	times := []time.Time{
		base,
		base.Add(1),              // same second, other nanoseconds
		base.Add(693533275),      // the next second, exactly on it
		base.Add(693533276),      // one nanosecond later
		base.Add(-306466724),     // back to the start of the first second
		base.Add(-306466725),     // the second before
		base.Add(24 * time.Hour), // the same time of day, the next day
		time.Date(2026, 12, 1, 18, 41, 55, 100000000, time.UTC), // trailing zeros
		time.Date(2026, 12, 1, 18, 41, 55, 120, time.UTC),
		time.Date(2026, 12, 1, 18, 41, 55, 999999999, time.UTC),
		time.Date(2026, 12, 1, 18, 41, 55, 0, time.FixedZone("x", 3600)), // not in UTC
		time.Date(1969, 12, 31, 23, 59, 59, 5, time.UTC),                 // before 1970
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 10, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)))
		if r.IntN(4) == 0 { // a run of lines within one second
			times = append(times, times[len(times)-1].Add(time.Duration(r.IntN(1000))))
		}
	}
	var f tsFormat
	for i, tm := range times {
		got := string(f.append(nil, tm))
		if want := tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("time %d (%v): got %s, want %s", i, tm, got, want)
		}
	}
}

// The ts strings handed back stay as they were while later lines are
// encoded (they are cut from shared chunks).
func TestTimestampStringsStay(t *testing.T) {
	enc := newLineEncoder(nil)
	at := time.Date(2026, 12, 1, 18, 41, 55, 306466724, time.UTC)
	var evs []*Event
	var want []string
	for i := range 200 {
		now := at.Add(time.Duration(i) * 123456789 * time.Nanosecond)
		ev := &Event{Turn: 1, Kind: "k"}
		_, p, err := enc.encode(ev, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		enc.commit(ev, p)
		evs = append(evs, ev)
		want = append(want, now.Format(time.RFC3339Nano))
	}
	for i, ev := range evs {
		if ev.TS != want[i] {
			t.Fatalf("event %d: ts %q, want %q", i, ev.TS, want[i])
		}
	}
}

// randomPayloads builds n payloads whose objects often repeat a few
// shapes (the same keys under the same key at the same depth), and change
// them now and then: a key swapped for another, added or dropped. Keys
// and values include what the rules refuse (a NUL, an NFD string, NaN),
// what masking rewrites (a long secret in a key or a string, a short
// secret as a whole string, two keys masked to the same text) and
// sensitive header names.
func randomPayloads(r *rand.Rand, n int) []map[string]any {
	keySets := [][]string{
		{"decision", "reason", "confidence", "risk", "tags", "owner", "priority", "blocking", "summary", "score"},
		{"agent", "args", "call", "prompt", "schema"},
		{"verdict"},
		{"a", "b", "c", "d"},
		{"Authorization", "cookie", "accept", "X-Id"},
		{"sk-long-secret-1", "REDACTED", "x-sk-long-secret-1", "plain"},
		{"<k>", "é", "a\u2028", "tab\tkey", "k\"q"},
	}
	oddKeys := []string{"k\x00", "Jose\u0301", "extra", "decision", "", "zz", "abcdefgh", "abcdefghi", "abcdefgh\x01"}
	strs := []string{"approve", "within policy", "p4ss", "key=sk-long-secret-1;", "<b>&</b>", "é日本", "bad\xffutf8", "line\nbreak", ""}
	var value func(depth int) any
	var object func(depth int) map[string]any
	value = func(depth int) any {
		switch k := r.IntN(20); {
		case k < 5:
			return strs[r.IntN(len(strs))]
		case k < 7:
			return int64(r.IntN(100))
		case k < 9:
			return float64(r.IntN(1000)) / 8
		case k == 9:
			return r.IntN(2) == 0
		case k == 10:
			return nil
		case k == 11 && depth < 4:
			return []any{value(depth + 1), value(depth + 1)}
		case k < 15 && depth < 4:
			return object(depth + 1)
		case k == 15 && r.IntN(10) == 0:
			return []any{"a\x00b", "Jose\u0301", math.NaN()}[r.IntN(3)]
		}
		return "v"
	}
	object = func(depth int) map[string]any {
		keys := keySets[r.IntN(len(keySets))]
		m := make(map[string]any, len(keys)+1)
		for _, k := range keys {
			m[k] = value(depth)
		}
		switch r.IntN(8) {
		case 0: // a key swapped for another
			delete(m, keys[r.IntN(len(keys))])
			m[oddKeys[r.IntN(len(oddKeys))]] = value(depth)
		case 1: // one more
			m[oddKeys[r.IntN(len(oddKeys))]] = value(depth)
		case 2: // one less
			delete(m, keys[r.IntN(len(keys))])
		}
		return m
	}
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"submission": object(2), "set": map[string]any{"verdict": object(3)}}
		if r.IntN(3) == 0 {
			sub := out[i]["submission"]
			out[i]["data"] = map[string]any{"submission": sub, "submitted": sub, "ok": true}
		}
	}
	return out
}

// An encoder that has written many payloads (and remembers their shapes)
// writes each next payload exactly as a new encoder does: the same bytes,
// or the same error; and, with nothing to mask or refuse, the bytes
// encoding/json writes. Each payload goes through both open maps and
// typed payloads.
func TestRememberedShapesChangeNothing(t *testing.T) {
	for _, secrets := range [][]string{nil, {"sk-long-secret-1", "p4ss"}} {
		mask := secret.New(secrets)
		warm := newPayloadEncoder(mask)
		r := rand.New(rand.NewPCG(7, uint64(len(secrets))))
		var errs, masked, same int
		for i, p := range randomPayloads(r, 3000) {
			for _, typed := range []bool{false, true} {
				encode := func(e *payloadEncoder) ([]byte, error) {
					if typed {
						return e.encodeTyped(nil, HarnessReturned{Namespace: "n", Data: p})
					}
					return e.encode(nil, p)
				}
				got, gotErr := encode(warm)
				want, wantErr := encode(newPayloadEncoder(mask))
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || string(got) != string(want) {
					t.Fatalf("payload %d (typed %v): remembered shapes give\n%s %v\na new encoder\n%s %v", i, typed, got, gotErr, want, wantErr)
				}
				switch {
				case gotErr != nil:
					errs++
				case len(secrets) > 0:
					masked++
				case bytes.Contains(got, []byte(Redacted)):
					masked++ // a sensitive header's value, whatever it was
				default:
					var ref any = p
					if typed {
						ref = map[string]any{"data": p, "namespace": "n"}
					}
					j, err := json.Marshal(ref)
					if err != nil {
						t.Fatal(err)
					}
					if string(j) != string(got) {
						t.Fatalf("payload %d (typed %v):\n got %s\nwant %s", i, typed, got, j)
					}
					same++
				}
			}
		}
		// The generator must reach every case it is there for.
		if errs < 100 || (len(secrets) > 0 && masked < 1000) || (len(secrets) == 0 && same < 1000) {
			t.Errorf("secrets %v: %d refused, %d masked, %d compared with encoding/json", secrets, errs, masked, same)
		}
		// A remembered shape holds only its own string, never the caller's.
		for _, set := range warm.shapes.set {
			for _, sh := range set {
				lo := uintptr(unsafe.Pointer(unsafe.StringData(sh.str)))
				hi := lo + uintptr(len(sh.str))
				for _, k := range sh.keys {
					for _, s := range []string{k.in, k.enc} {
						if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && (p < lo || p+uintptr(len(s)) > hi) {
							t.Fatalf("shape key %q is not held in the shape's own string", s)
						}
					}
				}
			}
		}
	}
}

// Objects nested in one another whose shapes fall in one set (so each
// new one evicts another, of another size) are written right, however
// often: a shape being written from is never replaced under it.
func TestNestedShapesInOneSet(t *testing.T) {
	const levels = 5
	size := func(level int) int { return 2 + level%2 } // 2, 3, 2, ...
	// parents[i] is the key level i's object is written under, at depth
	// i+2, chosen so that all levels' shapes fall in one set.
	var parents []string
	want := -1
	for i := 0; len(parents) < levels && i < 1_000_000; i++ {
		p := fmt.Sprintf("m%d%c", i, 'a'+i%26)
		set := shapeSet(p, len(parents)+2, size(len(parents)))
		if want < 0 {
			want = set
		}
		if set == want {
			parents = append(parents, p)
		}
	}
	if len(parents) < levels {
		t.Fatal("no colliding parents found")
	}
	// nest builds the levels: each object has "a", the next level (under
	// its parent, which sorts after "a") and, when of size 3, "z"; so a
	// level whose shape were replaced by another's while written would
	// find the other's keys in its own map. In odd rounds the innermost
	// object has other keys, so its shape misses and evicts one.
	nest := func(round int) map[string]any {
		var inner map[string]any
		for i := levels - 1; i >= 0; i-- {
			m := map[string]any{"a": round}
			if inner != nil {
				m[parents[i+1]] = inner
			} else {
				m[fmt.Sprintf("x%d", round%2)] = round
			}
			if size(i) == 3 {
				m["z"] = i
			}
			inner = m
		}
		return map[string]any{parents[0]: inner}
	}
	enc := newPayloadEncoder(nil)
	for round := range 8 {
		p := nest(round)
		got, err := enc.encode(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(p)
		if string(got) != string(w) {
			t.Fatalf("round %d:\n got %s\nwant %s", round, got, w)
		}
	}
}

// A shape an enclosing object is being written from is never handed out
// to be replaced; with both ways of a set busy, nothing is remembered.
func TestBusyShapesAreNotReplaced(t *testing.T) {
	// q and r: parents whose shapes fall in p's set.
	var others []string
	for i := 0; len(others) < 2 && i < 1_000_000; i++ {
		if o := fmt.Sprintf("m%d%c", i, 'a'+i%26); shapeSet(o, 2, 3) == shapeSet("p", 2, 3) {
			others = append(others, o)
		}
	}
	if len(others) < 2 {
		t.Fatal("no colliding parents found")
	}
	q, r := others[0], others[1]
	var s shapes
	set := &s.set[shapeSet("p", 2, 3)]
	set[0] = shape{parent: q, depth: 2, keys: make([]shapeKey, 3), busy: 1}
	set[1] = shape{parent: r, depth: 2, keys: make([]shapeKey, 3), used: true}
	for range 3 {
		sh, known := s.find("p", 2, 3)
		if known || sh != &set[1] {
			t.Fatalf("find gave way 0 %v (known %v), want way 1, the one not busy", sh == &set[0], known)
		}
	}
	set[1].busy = 1
	if sh, known := s.find("p", 2, 3); sh != nil || known {
		t.Fatalf("with both ways busy, find gave a shape to replace")
	}
	// A busy shape is still found (read) by an object of its own shape.
	if sh, known := s.find(q, 2, 3); sh != &set[0] || !known {
		t.Fatalf("a busy shape was not found")
	}
}

// Short decimals take a path of their own; every float64 is still written
// as encoding/json writes it.
func TestFloatsFormatLikeEncodingJSON(t *testing.T) {
	values := []float64{0.92, 7.5, 250.5, -2.25, 1, -1, 0.1, 0.2, 0.3, 1.005, 123456.789012, 999999.999999,
		1e-6, 1.5e-6, 9.99999e-7, 1e6, 999999.5, 0.000001, 0.0000015, 100, 40, 0.5, 1.0 / 3, 2.0 / 3,
		math.Copysign(0, -1), 0, 5e-324, math.MaxFloat64, 1e21, 123456.1234567, 0.1 + 0.2, 4.35, 4.345, 0.045}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		places := r.IntN(8)
		n := r.Int64N(2_000_000_000_000) - 1_000_000_000_000
		values = append(values, float64(n)/math.Pow(10, float64(places)+6), float64(n%1_000_000)/math.Pow(10, float64(places)))
		values = append(values, (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(14)-7)))
	}
	for _, f := range values {
		got, err := appendFloat(nil, f, 64)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(f)
		if string(got) != string(want) {
			t.Fatalf("%v (%b): got %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
}
