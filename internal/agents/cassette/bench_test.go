package cassette

import (
	"fmt"
	"strings"
	"testing"
)

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
		if _, ok := c.Pick(NewKey("h", "s", args, nil)); !ok {
			b.Fatal("miss")
		}
	}
}
