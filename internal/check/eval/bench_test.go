package eval

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkCheck validates the hello dataset (story load, call site,
// hashes, schema checks of the expects).
func BenchmarkCheck(b *testing.B) {
	p := filepath.Join("..", "..", "..", "stories", "hello", "evals", "compose.yaml")
	for b.Loop() {
		c, err := Check(p)
		if err != nil || !c.OK() {
			b.Fatal(err, c.Errors)
		}
		c.Close()
	}
}

// BenchmarkRunLive runs testdata/audit's matrix (3 candidates × 10
// examples × 2 repeats = 60 calls) against in-process agents: the eval's
// own overhead per call through the host.
func BenchmarkRunLive(b *testing.B) {
	c, err := Check(filepath.Join("testdata", "audit", "evals", "audit.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	reg := testAgents(b, c.Story)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), c, Options{Registry: reg, Parallel: 4, Now: t0}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*60), "ns/call")
}

// BenchmarkRunReplay replays the hello story's committed eval cassette
// (15 calls).
func BenchmarkRunReplay(b *testing.B) {
	evals := filepath.Join("..", "..", "..", "stories", "hello", "evals")
	c, err := Check(filepath.Join(evals, "compose.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		rp, err := LoadReplay(filepath.Join(evals, "cassettes", "compose.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(context.Background(), c, Options{Replay: rp, Now: t0}); err != nil {
			b.Fatal(err)
		}
	}
}
