package testrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLongFlow writes, next to a copy of the hello story, a flow of n
// turns (greet, again, greet, ...) and a cassette with one recorded episode
// per greeting, and returns the story path.
func writeLongFlow(b testing.TB, n int) string {
	b.Helper()
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
	for i := 0; i < n; i++ {
		if i%2 == 1 {
			fl.WriteString("  - intent: {name: again}\n    expect_state: lobby\n")
			continue
		}
		name := fmt.Sprintf("P%d", i)
		fmt.Fprintf(&fl, "  - intent: {name: greet, slots: {name: %s}}\n    expect_state: greeted\n    expect_world: {name: %s}\n", name, name)
		fmt.Fprintf(&cas, "  - id: g%d\n    match: {handler: agent.demo, phase: greeting, call: compose}\n    agent: {verb: decide, response: '{\"text\":\"Hi %s\",\"tone\":\"casual\",\"done\":true}'}\n", i, name)
	}
	fl.WriteString("strict_cassette_coverage: true\n")
	if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flows", "long.yaml"), []byte(fl.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cassette.yaml"), []byte(cas.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "app.yaml")
}

// BenchmarkFlow1000Turns replays a 1,000-turn flow (500 agent calls) from
// a cassette: load, parse, run and assert, as `kitsoki test flows` does.
func BenchmarkFlow1000Turns(b *testing.B) {
	app := writeLongFlow(b, 1000)
	for b.Loop() {
		fxs, err := LoadFixtures(app, "")
		if err != nil {
			b.Fatal(err)
		}
		r := NewRunner(WithFlowGetenv(noEnv))
		rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
		r.Close()
		if err != nil || rep.Failed != 0 || rep.Passed != 1 {
			b.Fatalf("err %v, report %+v %v", err, rep, rep.Results[0].Turns[0].Failures)
		}
	}
}

// BenchmarkCassetteMatch is one match over a 500-episode cassette whose
// matching episode is the last.
func BenchmarkCassetteMatch(b *testing.B) {
	var y strings.Builder
	y.WriteString("kind: host_cassette\nepisodes:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&y, "  - {id: e%d, replay: any, match: {handler: h, call: c%d, args: {n: %d}}, response: {data: {}}}\n", i, i, i)
	}
	c := mustCassette(b, y.String())
	args := map[string]any{"call": "c499", "args": map[string]any{"n": int64(499)}}
	for b.Loop() {
		if _, ok := c.pick(newCallKey("h", "s", args)); !ok {
			b.Fatal("miss")
		}
	}
}
