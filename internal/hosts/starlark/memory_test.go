package starlark

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// memoryBombs are scripts that try to take more memory than the bound in
// few steps. Each must fail with a memory error, having allocated (in all,
// which bounds the peak) no more than the bound plus slack: an operation
// is refused before it allocates what would not fit (issue 28: s = s + s
// 31 times returned a 2 GiB string, 40 times reached 16.8 GB; [0] *
// 1000000000 succeeded at 15.7 GB).
var memoryBombs = []struct {
	name  string
	body  string // main's body
	limit uint64 // MaxMemory; 0 is the default 256 MiB
	steps uint64 // MaxSteps; 0 is the default
	loop  bool   // grows by small steps, leaving garbage: only the peak is bounded
}{
	// The attacks of the issue, at the default bound.
	{"s + s, 31 times", "s = 'x'\n    for i in range(31):\n        s = s + s\n    return {'n': len(s)}", 0, 0, false},
	{"s + s, 40 times", "s = 'x'\n    for i in range(40):\n        s = s + s\n    return {'n': len(s)}", 0, 0, false},
	{"[0] * 1000000000", "l = [0] * 1000000000\n    return {'n': len(l)}", 0, 0, false},
	// The same and every other way to grow a value in one step, at 16 MiB.
	{"s += s", "s = 'x'\n    for i in range(40):\n        s += s\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"string repeat", "s = 'x' * (1 << 28)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"bytes repeat", "b = b'x' * (1 << 28)\n    return {'n': len(b)}", 16 << 20, 0, false},
	{"int repeat", "l = 100000000 * [0]\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"tuple repeat", "t = (0, 1) * 100000000\n    return {'n': len(t)}", 16 << 20, 0, false},
	{"list concatenation", "l = [0] * 500000\n    for i in range(40):\n        l = l + l\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"list +=", "l = [0] * 500000\n    for i in range(40):\n        l += l\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"list += range", "l = []\n    l += range(1000000000)\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"s *= n", "s = 'x' * 1000\n    for i in range(40):\n        s *= 2\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"join", "l = ['x' * 1000000] * 1000\n    s = ''.join(l)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"join through a bound method", "j = ''.join\n    s = j(['x' * 1000000] * 1000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"join through getattr", "j = getattr('', 'join')\n    s = j(['x' * 1000000] * 1000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"replace", "s = ('a' * 1000).replace('a', 'b' * 1000000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"percent format", "big = 'x' * 1000000\n    s = ('%s' * 1000) % tuple([big] * 1000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"percent format of a dict", "big = 'x' * 1000000\n    s = ('%(a)s' * 1000) % {'a': big}\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"percent format, doubling", "s = 'x'\n    for i in range(40):\n        s = '%s%s' % (s, s)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"percent-assign", "s = 'x'\n    for i in range(40):\n        f = '%s%s'\n        f %= (s, s)\n        s = f\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"format", "s = ('{0}' * 1000).format('x' * 1000000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"str of shared lists", "a = ['x' * 1000] * 1000\n    b = [a] * 1000\n    s = str(b)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"repr of shared lists", "a = ['x' * 1000] * 1000\n    s = repr([a] * 1000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"json.encode of shared lists", "a = ['x' * 1000] * 1000\n    s = json.encode([a] * 1000)\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"json.indent of deep nesting", "s = json.indent('[' * 100000 + ']' * 100000, indent = '          ')\n    return {'n': len(s)}", 16 << 20, 0, false},
	{"list(range)", "l = list(range(1000000000))\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"tuple(range)", "t = tuple(range(1000000000))\n    return {'n': len(t)}", 16 << 20, 0, false},
	{"sorted(range)", "l = sorted(range(1000000000))\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"enumerate(range)", "l = enumerate(range(1000000000))\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"zip(range, range)", "l = zip(range(1000000000), range(1000000000))\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"extend(range)", "l = []\n    l.extend(range(1000000000))\n    return {'n': len(l)}", 16 << 20, 0, false},
	{"dict(zip(...))", "d = dict([(i, i) for i in range(10)] * 10000000)\n    return {'n': len(d)}", 16 << 20, 0, false},
	{"bytes(range)", "b = bytes(range(256)) * 10000000\n    return {'n': len(b)}", 16 << 20, 0, false},
	{"*args of a range", "def f(*a):\n        return len(a)\n    return {'n': f(*range(1000000000))}", 16 << 20, 0, false},
	{"split", "s = 'a,' * 4000000\n    l = s.split(',')\n    l2 = s.split(',')\n    return {'n': len(l) + len(l2)}", 16 << 20, 0, false},
	{"int squaring", "x = 3\n    for i in range(40):\n        x = x * x\n    return {'n': x % 10}", 16 << 20, 0, true},
	{"print of shared lists", "a = ['x' * 1000] * 1000\n    print([a] * 1000)\n    return {}", 16 << 20, 0, false},
	{"fail of shared lists", "a = ['x' * 1000] * 1000\n    fail([a] * 1000)", 16 << 20, 0, false},
	{"a returned value that expands", "a = [0] * 1000\n    b = [a] * 1000\n    return {'c': [b] * 100}", 16 << 20, 0, false},
	{"appends in a loop", "l = []\n    for i in range(100000000):\n        l.append(i)\n    return {'n': len(l)}", 16 << 20, 1 << 40, true},
	{"a comprehension", "l = [i for i in range(100000000)]\n    return {'n': len(l)}", 16 << 20, 1 << 40, true},
	{"a dict in a loop", "d = {}\n    for i in range(100000000):\n        d[i] = i\n    return {'n': len(d)}", 16 << 20, 1 << 40, true},
}

func TestMemoryBombs(t *testing.T) {
	f := newFixture(t)
	for _, tc := range memoryBombs {
		t.Run(tc.name, func(t *testing.T) {
			s := f.script("bomb", "def main(ctx):\n    "+tc.body+"\n", "")
			h := New(f.st, Options{MaxMemory: tc.limit, MaxSteps: tc.steps})
			limit := tc.limit
			if limit == 0 {
				limit = DefaultMaxMemory
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			peak := samplePeak()
			_, got := outcome(t, h, call(s, nil, nil))
			grewAtMost := peak()
			runtime.ReadMemStats(&after)
			if !strings.Contains(got, "exceeded the memory limit of ") {
				t.Fatalf("error = %q, want the memory limit", got)
			}
			// The slack: the small steps between two heap readings, and
			// one copy of a value the bound admitted (docs/hosts.md).
			most := limit + limit/2 + (8 << 20)
			if grewAtMost > most {
				t.Errorf("the heap grew by %d MiB at its peak; the bound is %d MiB", grewAtMost>>20, limit>>20)
			}
			// All the call allocated bounds its peak, where no garbage
			// is made on the way.
			if grew := after.TotalAlloc - before.TotalAlloc; !tc.loop && grew > most {
				t.Errorf("the call allocated %d MiB in all; the bound is %d MiB", grew>>20, limit>>20)
			}
		})
	}
}

// samplePeak watches the heap every 100µs until the returned function is
// called, which returns the most it grew by. A sample can miss a peak
// shorter than that, so the test also bounds all a call allocates where it
// can.
func samplePeak() func() uint64 {
	base := heapBytes()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			if h := heapBytes(); h > base && h-base > most {
				most = h - base
			}
			select {
			case <-stop:
				done <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// The memory error says where, what would not fit, and the bound; the
// effect's on_error sees it as the call's error (a domain error).
func TestMemoryErrorText(t *testing.T) {
	f := newFixture(t)
	s := f.script("bomb", "def main(ctx):\n    s = 'x'\n    for i in range(40):\n        s = s + s\n    return {}\n", "")
	res, err := New(f.st, Options{MaxMemory: 16 << 20}).Invoke(t.Context(), call(s, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var de *Error
	if res.Err == nil || !errors.As(res.Err, &de) || de.Kind != KindMemory {
		t.Fatalf("want a domain error of kind memory, got %v", res.Err)
	}
	want := "host.starlark.run: bomb.star: bomb.star:4:15: exceeded the memory limit of 16 MiB a call: string + string would need "
	if !strings.HasPrefix(res.Err.Error(), want) || !strings.Contains(res.Err.Error(), "more, with the heap already ") {
		t.Errorf("error = %q\nwant it to start %q", res.Err, want)
	}
}

// Scripts well within the bound are untouched by the guards: the same
// results as the interpreter's own operations, errors included.
func TestGuardedOperationsBehaveAsTheInterpreter(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, body string
		want       any
		err        string
	}{
		{"string ops", "return {'v': 'a' + 'b' * 2 + '%s-%d' % ('x', 3) + '{}|{}'.format(1, 'y')}", "abbx-31|y", ""},
		{"list += extends in place", "a = [1]\n    b = a\n    a += (2, 3)\n    return {'v': b}", []any{int64(1), int64(2), int64(3)}, ""},
		{"dict |= updates in place", "a = {'x': 1}\n    b = a\n    a |= {'y': 2}\n    return {'v': sorted(b.keys())}", []any{"x", "y"}, ""},
		{"%= on an element", "d = {'k': '%s!'}\n    d['k'] %= 'hi'\n    return {'v': d['k']}", "hi!", ""},
		{"augmented index evaluated once", "n = [0]\n    def idx():\n        n[0] += 1\n        return 0\n    l = [10]\n    l[idx()] += 5\n    return {'v': [l[0], n[0]]}", []any{int64(15), int64(1)}, ""},
		{"methods", "return {'v': ','.join(['a', 'b']).replace(',', ';').upper().split(';')}", []any{"A", "B"}, ""},
		{"bound method", "j = '-'.join\n    return {'v': j(['a', 'b'])}", "a-b", ""},
		{"getattr of a guarded method", "return {'v': getattr('-', 'join')(['a', 'b'])}", "a-b", ""},
		{"star args", "def f(*a, **k):\n        return len(a) + len(k)\n    return {'v': f(*[1, 2], **{'x': 3})}", int64(3), ""},
		{"json", "return {'v': json.decode(json.encode({'a': [1, 2]}))['a']}", []any{int64(1), int64(2)}, ""},
		{"shift", "x = 1\n    x <<= 3\n    return {'v': x << 2}", int64(32), ""},
		{"a type error is the interpreter's", "return {'v': 1 + 'a'}", nil, "bomb.star:2:20: unknown binary op: int + string"},
		{"+= type error", "x = 1\n    x += 'a'\n    return {}", nil, "bomb.star:3:7: unknown binary op: int + string"},
		{"frozen list +=", "l = ctx.inputs['l']\n    l += [1]\n    return {}", nil, "bomb.star:3:7: cannot apply += to frozen list"},
		{"a missing method", "return {'v': 'a'.jion([])}", nil, "bomb.star:2:21: string has no .jion field or method"},
		{"a missing guarded method", "return {'v': (1).join([])}", nil, "bomb.star:2:21: int has no .join field or method"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.script("bomb", "def main(ctx):\n    "+tc.body+"\n", "inputs:\n  l: {type: list}\n")
			data, got := outcome(t, New(f.st, Options{}), call(s, map[string]any{"l": []any{int64(0)}}, nil))
			if tc.err != "" {
				if !strings.Contains(got, tc.err) {
					t.Errorf("error = %q, want %q", got, tc.err)
				}
				return
			}
			if got != "" {
				t.Fatal(got)
			}
			if diff := cmp.Diff(tc.want, data["v"]); diff != "" {
				t.Errorf("v (-want +got):\n%s", diff)
			}
		})
	}
}

// A name of the guards' cannot be used by a script.
func TestReservedNames(t *testing.T) {
	f := newFixture(t)
	s := f.script("bomb", "def main(ctx):\n    _kitsoki_add = 1\n    return {}\n", "")
	_, got := outcome(t, New(f.st, Options{}), call(s, nil, nil))
	if want := "bomb.star:2:5: the name _kitsoki_add is reserved (names starting with _kitsoki_ are kitsoki's)"; !strings.Contains(got, want) {
		t.Errorf("error = %q, want %q", got, want)
	}
}
