package eval

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The bundled example story's committed eval report is still passing for
// the story as it is now (a changed prompt, schema, persona tools or
// dataset makes it stale), matches the report schema, and is exactly what
// replaying the committed cassette produces.
func TestHelloReportStillPassing(t *testing.T) {
	evals := filepath.Join("..", "..", "..", "stories", "hello", "evals")
	c := mustCheck(t, filepath.Join(evals, "compose.yaml"))
	if !c.OK() {
		t.Fatalf("stories/hello/evals/compose.yaml is invalid: %q", c.Errors)
	}
	status, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	if status != StatusPassing {
		t.Fatalf("stories/hello eval status is %s, want passing; re-run:\n  kitsoki eval run stories/hello/evals/compose.yaml --live --cassette stories/hello/evals/cassettes/compose.yaml\n(re-record the cassette with --record first if the call site changed)", status)
	}
	latest := filepath.Join(evals, "reports", "compose", LatestName)
	committed, err := os.ReadFile(latest)
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, committed)

	rp, err := LoadReplay(filepath.Join(evals, "cassettes", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), c, Options{Replay: rp})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withoutGeneratedAt(committed), withoutGeneratedAt(b)); diff != "" {
		t.Errorf("replaying the committed cassette no longer gives the committed report (-committed +replay):\n%s", diff)
	}
}
