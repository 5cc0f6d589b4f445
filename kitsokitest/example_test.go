package kitsokitest_test

import (
	"testing"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/kitsokitest"
)

// The examples of this package take a *testing.T, so they are compiled,
// not run; the package's tests run the same calls.

// Every flow fixture of a story as a subtest.
func ExampleRunFlows() {
	_ = func(t *testing.T) {
		kitsokitest.RunFlows(t, "../stories/hello/app.yaml")
	}
}

// A recorded run replayed turn by turn.
func ExampleReplay() {
	_ = func(t *testing.T) {
		s := kitsokitest.Replay(t, "../stories/hello/app.yaml", "../stories/hello/cassettes/demo.yaml")
		if out := s.Step("greet name=Ada style=formal"); out.View != "Ada was greeted (formal)." {
			t.Errorf("view = %q", out.View)
		}
	}
}

// One agent replayed from a cassette, bound like any Go-func agent.
func ExampleCassetteAgent() {
	_ = func(t *testing.T) {
		s, err := kitsoki.Open("../stories/hello/app.yaml",
			kitsoki.WithAgent("agent.demo", kitsokitest.CassetteAgent(t, "../stories/hello/cassettes/demo.yaml", "agent.demo")))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Do(t.Context(), "greet name=Ada style=formal"); err != nil {
			t.Fatal(err)
		}
	}
}
