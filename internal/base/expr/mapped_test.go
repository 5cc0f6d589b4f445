package expr

import (
	"math/rand/v2"
	"testing"
)

// byteMap is the plain form of mapped: one source offset per output byte.
type byteMap struct {
	out    string
	origin []int
}

func (b *byteMap) copy(src string, from, to int) {
	b.out += src[from:to]
	for i := from; i < to; i++ {
		b.origin = append(b.origin, i)
	}
}

func (b *byteMap) insert(s string, at int) {
	b.out += s
	for range len(s) {
		b.origin = append(b.origin, at)
	}
}

func (b *byteMap) append(o *byteMap) {
	b.out += o.out
	b.origin = append(b.origin, o.origin...)
}

func (b *byteMap) sourceOffset(off int) int {
	switch {
	case len(b.origin) == 0:
		return 0
	case off < 0:
		return b.origin[0]
	case off >= len(b.origin):
		return b.origin[len(b.origin)-1] + 1
	}
	return b.origin[off]
}

// TestMappedOrigins checks mapped's runs against one origin per byte, for
// random sequences of copies (adjacent or not), inserts and appends.
func TestMappedOrigins(t *testing.T) {
	const src = "Hello {{ world.name ?? 'x' }} and {% if a %}b{% endif %}!"
	r := rand.New(rand.NewPCG(3, 4))
	build := func(m *mapped, b *byteMap, ops int) {
		pos := 0
		for range ops {
			switch r.IntN(3) {
			case 0: // copy on from where the last copy ended, or jump
				if r.IntN(2) == 0 {
					pos = r.IntN(len(src))
				}
				to := pos + r.IntN(len(src)-pos+1)
				m.copy(src, pos, to)
				b.copy(src, pos, to)
				pos = to
			case 1:
				s, at := []string{"", "|", "__show__(", ")"}[r.IntN(4)], r.IntN(len(src)+1)
				m.insert(s, at)
				b.insert(s, at)
			case 2:
				var im mapped
				var ib byteMap
				from := r.IntN(len(src))
				to := from + r.IntN(len(src)-from+1)
				im.copy(src, from, to)
				ib.copy(src, from, to)
				im.insert("!", to)
				ib.insert("!", to)
				m.append(&im)
				b.append(&ib)
			}
		}
	}
	for range 2000 {
		var m mapped
		var b byteMap
		build(&m, &b, r.IntN(8))
		if m.String() != b.out {
			t.Fatalf("text %q, want %q", m.String(), b.out)
		}
		for off := -1; off <= len(b.out)+1; off++ {
			if got, want := m.sourceOffset(off), b.sourceOffset(off); got != want {
				t.Fatalf("%q: sourceOffset(%d) = %d, want %d", b.out, off, got, want)
			}
		}
	}
}
