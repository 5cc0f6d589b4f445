package testrunner

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/runtime"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// RunFlows runs every flow fixture of the story at appPath (the default
// flows glob, as `kitsoki test flows` finds them) as subtests of t, one
// per fixture, so a story repository gets go test coverage with:
//
//	func TestFlows(t *testing.T) { testrunner.RunFlows(t, "app.yaml") }
func RunFlows(t *testing.T, appPath string, opts ...FlowOption) {
	t.Helper()
	fixtures, err := LoadFixtures(appPath, "")
	if err != nil {
		t.Fatal(err)
	}
	runFixtures(t, fixtures, opts)
}

// RunFlow runs the fixtures of one file as subtests of t; appPath is the
// story of fixtures that name no app:.
func RunFlow(t *testing.T, appPath, fixturePath string, opts ...FlowOption) {
	t.Helper()
	b, err := readFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := ParseFixtures(b, fixturePath, appPath)
	if err != nil {
		t.Fatal(err)
	}
	runFixtures(t, fixtures, opts)
}

func runFixtures(t *testing.T, fixtures []*Fixture, opts []FlowOption) {
	t.Helper()
	r := NewRunner(opts...)
	t.Cleanup(func() { r.Close() })
	for _, fx := range fixtures {
		t.Run(strings.TrimSuffix(fx.Name, filepath.Ext(fx.Name)), func(t *testing.T) {
			f, err := r.Prepare(fx)
			if err != nil {
				t.Fatal(err)
			}
			res := f.Run(t.Context())
			if res.Skipped {
				t.Skip(res.SkipReason)
			}
			for _, w := range res.Warnings {
				t.Logf("warning: %s", w)
			}
			if n := res.DroppedHostCalls; n > 0 {
				t.Logf("%d host call(s) dropped: the fixture has no stubs", n)
			}
			for _, tr := range res.Turns {
				where := "[session]"
				if tr.TurnIndex != SessionIndex {
					where = "turn " + strconv.Itoa(tr.TurnIndex+1) + " → " + tr.NewState
				}
				for _, msg := range tr.Failures {
					t.Errorf("%s: %s", where, msg)
				}
			}
		})
	}
}

// Replayed is a story session whose agents and hosts answer from a
// cassette, as `kitsoki run --cassette` runs it, for go tests.
type Replayed struct {
	*orchestrator.Session
	Sink     *trace.MemSink
	Cassette *Cassette
	Start    *orchestrator.Outcome // the outcome of turn 0 (the root's entry)
	t        testing.TB
}

// Replay loads the story at appPath and the cassette at cassettePath and
// starts a session (the root state's on_enter runs) in which every declared
// agent and every host the cassette names answer from its episodes. The
// session runs on a fake clock, so delays are instant. Everything is closed
// when the test ends.
//
//	s := testrunner.Replay(t, "app.yaml", "cassettes/demo.yaml")
//	out := s.Do("greet name=Ada style=formal")
func Replay(t testing.TB, appPath, cassettePath string) *Replayed {
	t.Helper()
	st, err := story.Load(appPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(FlowEpoch)
	c, err := LoadCassette(cassettePath, WithClock(clk), WithSecrets(st.Secrets))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Clock: clk, Cassette: c, IgnorePins: true, Session: &runtime.Session{ID: "replay"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sink, sess := rt.Memory(), rt.Session()
	out, err := sess.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &Replayed{Session: sess, Sink: sink, Cassette: c, Start: out, t: t}
}

// Do takes a turn from a typed line ("intent key=value ..."); a parse or
// trace failure fails the test.
func (r *Replayed) Do(line string) *orchestrator.Outcome {
	r.t.Helper()
	intent, slots, err := r.ParseInput(line)
	if err != nil {
		r.t.Fatalf("%q: %v", line, err)
	}
	out, err := r.Turn(context.Background(), intent, slots, "")
	if err != nil {
		r.t.Fatalf("%q: %v", line, err)
	}
	for _, w := range r.Cassette.TakeWarnings() {
		r.t.Logf("%q: warning: %s", line, w)
	}
	return out
}
