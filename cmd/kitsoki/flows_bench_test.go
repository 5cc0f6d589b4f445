package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkTestFlows1000Turns is `kitsoki test flows` (the whole command,
// in process) on a 1,000-turn flow whose 500 agent calls replay from a
// cassette.
func BenchmarkTestFlows1000Turns(b *testing.B) {
	dir := b.TempDir()
	for _, f := range []string{"app.yaml", "prompts/greet.md", "schemas/greeting.json"} {
		src, err := os.ReadFile(filepath.Join("../../stories/hello", f))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var fl, cas strings.Builder
	fl.WriteString("test_kind: flow\napp: ../app.yaml\nhost_cassette: ../cassette.yaml\nturns:\n")
	cas.WriteString("kind: host_cassette\napp_id: hello\nepisodes:\n")
	for i := 0; i < 1000; i++ {
		if i%2 == 1 {
			fl.WriteString("  - intent: {name: again}\n    expect_state: lobby\n")
			continue
		}
		fmt.Fprintf(&fl, "  - intent: {name: greet, slots: {name: P%d}}\n    expect_state: greeted\n", i)
		fmt.Fprintf(&cas, "  - id: g%d\n    match: {handler: agent.demo, phase: greeting}\n    agent: {verb: decide, response: '{\"text\":\"Hi\",\"tone\":\"casual\",\"done\":true}'}\n", i)
	}
	if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flows", "long.yaml"), []byte(fl.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cassette.yaml"), []byte(cas.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	app := filepath.Join(dir, "app.yaml")
	for b.Loop() {
		if code := run([]string{"test", "flows", app}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
