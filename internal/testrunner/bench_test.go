package testrunner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/longflow"
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
