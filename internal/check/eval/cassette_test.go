package eval

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// withoutGeneratedAt blanks the one line that may differ between runs.
func withoutGeneratedAt(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), `"generated_at"`) || strings.HasPrefix(strings.TrimSpace(l), `"pinned_at"`) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// A live run recorded with --record and replayed from the cassette gives
// the same report, byte for byte except generated_at, on every replay and
// whatever the parallelism; recording the same answers twice gives the same
// cassette. The matrix includes errors and a fallback, so those replay too.
func TestRecordReplayByteIdentical(t *testing.T) {
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	setDataset(t, ds, func(s string) string {
		return replaceBlock(s, "matrix:", "matrix:\n  profiles: [agent.good, agent.flaky, agent.bad, agent.crash, agent.local]\n  models: {agent.good: [m-big, m-small]}\n  effort: [low]\n  repeat: 3\n")
	})
	c := mustCheck(t, ds)
	record := func(parallel int) (*Report, []byte) {
		rec := NewRecording()
		r, err := Run(context.Background(), c, Options{Registry: testAgents(t, c.Story), Record: rec, Parallel: parallel,
			Clock: clock.NewFake(t0), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		cas, err := rec.Cassette(c.Story)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cas.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return r, b
	}
	live, cas1 := record(8)
	_, cas2 := record(3)
	if !bytes.Equal(cas1, cas2) {
		t.Fatalf("recording twice gave different cassettes:\n%s", cmp.Diff(string(cas1), string(cas2)))
	}
	path := filepath.Join(t.TempDir(), "audit-eval.yaml")
	if err := os.WriteFile(path, cas1, 0o644); err != nil {
		t.Fatal(err)
	}

	replay := func(parallel int, now time.Time) []byte {
		rp, err := LoadReplay(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), c, Options{Replay: rp, Parallel: parallel, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		validateReport(t, b)
		return b
	}
	a := replay(8, t0)
	b := replay(1, t0.Add(time.Hour))
	if bytes.Equal(a, b) {
		t.Fatal("generated_at did not change between replays")
	}
	if diff := cmp.Diff(withoutGeneratedAt(a), withoutGeneratedAt(b)); diff != "" {
		t.Fatalf("replays differ beyond generated_at (-first +second):\n%s", diff)
	}

	// The replay reproduces the live run's report (it ran on a fake clock,
	// so its latencies were 0 as the replay's are); only the mode differs.
	lb, _ := live.Encode()
	want := strings.Replace(withoutGeneratedAt(lb), `"mode": "live"`, `"mode": "replay"`, 1)
	if diff := cmp.Diff(want, withoutGeneratedAt(a)); diff != "" {
		t.Errorf("replay differs from the live run (-live +replay):\n%s", diff)
	}
	var rep Report
	if err := jsonUnmarshal(a, &rep); err != nil {
		t.Fatal(err)
	}
	if local := candidateByProfile(t, &rep, "agent.local"); local.FallbackRate != 1 {
		t.Errorf("the fallback did not replay: %+v", local)
	}
}

// Replayed calls take the recorded duration as their latency.
func TestReplayLatencyIsRecorded(t *testing.T) {
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	setDataset(t, ds, func(s string) string {
		return replaceBlock(s, "matrix:", "matrix:\n  profiles: [agent.good]\n")
	})
	c := mustCheck(t, ds)
	cas := `kind: host_cassette
app_id: audit-test
episodes:
`
	for i, ex := range c.Dataset.Examples {
		d := "approve"
		if ex.Expect["decision"] == "reject" {
			d = "reject"
		}
		cas += "  - id: ep" + ex.Name + "\n    match: {handler: agent.good, call: audit, args: " + jsonString(t, ex.Args) + "}\n" +
			"    agent: {verb: decide, duration_ms: " + []string{"100", "200", "300", "400", "500", "600", "700", "800", "900", "1000"}[i] +
			", cost_usd: 0.001, prompt_tokens: 10, response_tokens: 5, response: '{\"decision\":\"" + d + "\",\"reason\":\"r\"}'}\n"
	}
	path := testkit.WriteFile(t, t.TempDir(), "c.yaml", cas)
	rp, err := LoadReplay(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), c, Options{Replay: rp, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Candidates[0]
	if g.P50LatencyMS != 500 || g.P95LatencyMS != 1000 || g.AvgCostUSD != 0.001 || g.AvgTokens != 15 || g.ComparatorPassRate != 1 {
		t.Errorf("replayed stats = %+v", g)
	}
}

// A cassette that lacks an answer fails the run instead of reporting
// failures that never happened.
func TestReplayMiss(t *testing.T) {
	dir := copyStory(t)
	c := mustCheck(t, filepath.Join(dir, "evals", "audit.yaml"))
	path := testkit.WriteFile(t, t.TempDir(), "empty.yaml", "kind: host_cassette\napp_id: audit-test\nepisodes: []\n")
	rp, err := LoadReplay(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), c, Options{Replay: rp, Now: t0})
	if err == nil || !strings.Contains(err.Error(), "has no answer for 60 call(s); re-record it with --live --record") {
		t.Fatalf("err = %v", err)
	}
}
