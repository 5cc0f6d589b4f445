package starlark

import (
	"context"
	"testing"

	starjson "go.starlark.net/lib/json"
	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

const benchScript = `def main(ctx):
    rows = [{"day": i, "t": ctx.inputs["base"] + i * 0.5} for i in range(ctx.inputs["days"])]
    top = max([r["t"] for r in rows])
    return {"rows": rows, "summary": "%d days, up to %s" % (len(rows), top)}
`

const benchSidecar = `inputs:
  base: {type: number, required: true}
  days: {type: int, required: true}
outputs:
  rows: {type: list}
  summary: {type: string}
`

// BenchmarkStarlarkRun is one host.starlark.run call of a small script
// (file read, sidecar parse and checks, cached program, ctx, conversion);
// the Floor sub-benchmark runs the same script with
// starlark.ExecFileOptions and calls main directly, which is the
// interpreter's own cost with a parse each time; Program runs a program
// compiled once (as the handler caches it), the floor under the handler's
// own work.
func BenchmarkStarlarkRun(b *testing.B) {
	f := newFixture(b)
	b.Run("Handler", func(b *testing.B) {
		s := f.script("bench", benchScript, benchSidecar)
		h := New(f.st, Options{})
		c := call(s, map[string]any{"base": 10.0, "days": int64(5)}, nil)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			res, err := h.Invoke(ctx, c)
			if err != nil || res.Err != nil {
				b.Fatal(err, res.Err)
			}
		}
	})
	in := starlark.NewDict(2)
	_ = in.SetKey(starlark.String("base"), starlark.Float(10))
	_ = in.SetKey(starlark.String("days"), starlark.MakeInt(5))
	ctxv := &object{name: "ctx", attrs: map[string]starlark.Value{"inputs": in}}
	b.Run("Floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			th := &starlark.Thread{}
			g, err := starlark.ExecFileOptions(&syntax.FileOptions{}, th, "bench.star", benchScript, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := starlark.Call(th, g["main"], starlark.Tuple{ctxv}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Program", func(b *testing.B) {
		env := starlark.StringDict{"json": starjson.Module, "math": starmath.Module}
		_, prog, err := starlark.SourceProgramOptions(&syntax.FileOptions{}, "bench.star", benchScript, env.Has)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			th := &starlark.Thread{}
			g, err := prog.Init(th, env)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := starlark.Call(th, g["main"], starlark.Tuple{ctxv}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMemoryBombs is how long the bound takes to stop the attacks of
// issue 28 at the default bound: each op is one refused call.
func BenchmarkMemoryBombs(b *testing.B) {
	f := newFixture(b)
	for _, tc := range memoryBombs[:3] {
		b.Run(tc.name, func(b *testing.B) {
			s := f.script("bomb", "def main(ctx):\n    "+tc.body+"\n", "")
			h := New(f.st, Options{})
			c := call(s, nil, nil)
			for b.Loop() {
				res, err := h.Invoke(context.Background(), c)
				if err != nil || res.Err == nil {
					b.Fatal(err, res)
				}
			}
		})
	}
}
