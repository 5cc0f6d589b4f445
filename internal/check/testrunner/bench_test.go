package testrunner

import (
	"context"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/longflow"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// BenchmarkFlow1000Turns replays a 1,000-turn flow (500 agent calls) from
// a cassette: load, parse, run and assert, as `kitsoki test flows` does.
func BenchmarkFlow1000Turns(b *testing.B) {
	app := longflow.Write(b, 1000)
	for b.Loop() {
		fxs, err := LoadFixtures(app, "")
		if err != nil {
			b.Fatal(err)
		}
		r := NewRunner(WithFlowGetenv(testkit.NoEnv))
		rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
		r.Close()
		if err != nil || rep.Failed != 0 || rep.Passed != 1 {
			b.Fatalf("err %v, report %+v %v", err, rep, rep.Results[0].Turns[0].Failures)
		}
	}
}
