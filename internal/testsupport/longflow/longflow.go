// Package longflow writes, for benchmarks, a long flow fixture over a copy
// of the bundled hello story, with a cassette that answers its agent calls.
package longflow

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Write copies the hello story into a temporary directory and writes
// flows/long.yaml, a flow of n turns (greet, again, greet, …) whose every
// greeting expects its name in the world, and cassette.yaml, one recorded
// agent answer per greeting (the flow asks for strict coverage). It
// returns the story's app.yaml.
func Write(tb testing.TB, n int) string {
	tb.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("longflow: cannot locate the hello story")
	}
	hello := filepath.Join(filepath.Dir(self), "..", "..", "..", "stories", "hello") // internal/testsupport/longflow → the repository root
	dir := tb.TempDir()
	for _, f := range []string{"app.yaml", "prompts/greet.md", "schemas/greeting.json"} {
		src, err := os.ReadFile(filepath.Join(hello, f))
		if err != nil {
			tb.Fatal(err)
		}
		write(tb, filepath.Join(dir, f), src)
	}
	var fl, cas strings.Builder
	fl.WriteString("test_kind: flow\napp: ../app.yaml\nhost_cassette: ../cassette.yaml\nturns:\n")
	cas.WriteString("kind: host_cassette\napp_id: hello\nepisodes:\n")
	for i := range n {
		if i%2 == 1 {
			fl.WriteString("  - intent: {name: again}\n    expect_state: lobby\n")
			continue
		}
		name := fmt.Sprintf("P%d", i)
		fmt.Fprintf(&fl, "  - intent: {name: greet, slots: {name: %s}}\n    expect_state: greeted\n    expect_world: {name: %s}\n", name, name)
		fmt.Fprintf(&cas, "  - id: g%d\n    match: {handler: agent.demo, phase: greeting, call: compose}\n    agent: {verb: decide, response: '{\"text\":\"Hi %s\",\"tone\":\"casual\",\"done\":true}'}\n", i, name)
	}
	fl.WriteString("strict_cassette_coverage: true\n")
	write(tb, filepath.Join(dir, "flows", "long.yaml"), []byte(fl.String()))
	write(tb, filepath.Join(dir, "cassette.yaml"), []byte(cas.String()))
	return filepath.Join(dir, "app.yaml")
}

func write(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}
