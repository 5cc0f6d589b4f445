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

// The decide benchmark's templates (internal/run/orchestrator's
// BenchmarkDecideInProcess): its prompt file, rendered against the args the
// host passes, and its with: map, re-rendered against the world.
const benchPrompt = "Audit this claim: {{ args.claim }} for {{ args.amount }}.\nAnswer with a verdict."

func benchDecideWith() map[string]any {
	return map[string]any{
		"agent": "auditor", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json",
		"args": map[string]any{"claim": "{{ world.claim }}", "amount": "{{ world.amount }}"},
	}
}

func BenchmarkDecidePrompt(b *testing.B) {
	t, err := CompileText(benchPrompt)
	if err != nil {
		b.Fatal(err)
	}
	env := Env{"args": map[string]any{"claim": "taxi 40", "amount": 40}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.Render(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecideWith(b *testing.B) {
	t, err := CompileTree(benchDecideWith())
	if err != nil {
		b.Fatal(err)
	}
	env := Env{"world": map[string]any{"claim": "taxi 40", "amount": 40, "verdict": map[string]any{}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}
