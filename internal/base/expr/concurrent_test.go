package expr

import (
	"sync"
	"testing"
)

// The story loader compiles expressions on several workers at once; under
// -race this fails if two compiles share mutable compiler state (expr-lang
// fills caches in its configuration while checking calls).
func TestCompileConcurrently(t *testing.T) {
	srcs := []string{
		`len(world.items) == 0`,
		`int(world.count) > 1 && float(world.ratio) < 0.5`,
		`len(world.a) + int(world.b) == len(world.c)`,
		`world.flag`,
		`world.x in ["a", "b"] and not (world.y matches "^z")`,
		`(world.mode == "llm" ? len(world.x) : int(world.y)) > 0`,
		`lower(trim(world.s)) == "yes" || hasPrefix(upper(world.s), "Y")`,
		`join(split(world.csv, ","), ";") != "" && hasSuffix(string(world.n), "0")`,
		`now() != nil`,
		`abs(round(float(world.f))) + min(1, 2) + max(3, 4) > 0 && type(world.x) == "string"`,
		`len(keys(world)) > 0 && get(world, "k") == nil`,
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				for _, s := range srcs {
					if _, err := CompileGuard(s); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
