package expr

import "testing"

// benchEnv is a small but realistic scope: a world with a handful of keys,
// slots, and a run.
func benchEnv() Env {
	return Env{
		"world": map[string]any{
			"a": "b", "x": "hello", "amount": 40, "auto_limit": 50,
			"verdict": map[string]any{"decision": "approve", "reason": "ok", "confidence": 0.9},
			"status":  "open",
		},
		"slots": map[string]any{"text": "taxi", "amount": 40},
		"run":   map[string]any{"id": "r1", "turn": 3},
	}
}

func BenchmarkGuard(b *testing.B) {
	for _, bc := range []struct{ name, src string }{
		{"eq", "world.a == 'b'"},
		{"example", "world.verdict?.decision == 'approve' && world.amount <= world.auto_limit"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g, err := CompileGuard(bc.src)
			if err != nil {
				b.Fatal(err)
			}
			env := benchEnv()
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := g.Eval(env); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

func BenchmarkValueTemplate(b *testing.B) {
	for _, bc := range []struct{ name, src string }{
		{"typed", "{{ world.x }}"},
		{"mixed", "{{ world.x }} ({{ world.amount }})"},
		{"literal", "plain text"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v, err := CompileValue(bc.src)
			if err != nil {
				b.Fatal(err)
			}
			env := benchEnv()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Eval(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTree(b *testing.B) {
	t, err := CompileTree(map[string]any{
		"agent": "auditor", "prompt": "prompts/audit.md",
		"args": map[string]any{"claim": "{{ world.x }}", "amount": "{{ world.amount }}"},
	})
	if err != nil {
		b.Fatal(err)
	}
	env := benchEnv()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkText(b *testing.B) {
	for _, bc := range []struct{ name, src string }{
		{"one", "{{ world.x }}"},
		{"view", `{{ world.x }} ({{ world.amount }}): {{ world.verdict.decision ?? "(pending)" }}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			t, err := CompileText(bc.src)
			if err != nil {
				b.Fatal(err)
			}
			env := benchEnv()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.Render(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
