package driver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

const helloApp = "../../../stories/hello/app.yaml"

// BenchmarkDurableTurns: what the index entry a durable session writes at
// every turn's end costs. One op is two turns of the hello story (greet,
// again; its agent answers in process) in a journalled session at the
// process durability level (no fsync): "journal" writes the journal only
// (a runtime with no plan), "journal+index" is a durable session of a
// store (driver.Local with a plan), which also rewrites <id>.json and
// appends to index.tsv after each turn. The two run interleaved in one
// process; the ratio is the index's share.
func BenchmarkDurableTurns(b *testing.B) {
	st, err := story.Load(helloApp)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	open := func(b *testing.B, indexed bool) Driver {
		dir := b.TempDir()
		cfg := runtime.Config{Agents: runtime.Agents{Live: true}, Trace: runtime.Trace{NoSync: true},
			Session: &runtime.Session{Journal: true}}
		var d *Local
		if indexed {
			plan, err := NewPlan(ctx, PlanRequest{Store: session.Store{Dir: dir}, Story: st, Quiet: true})
			if err != nil {
				b.Fatal(err)
			}
			if d, err = OpenLocal(st, cfg, plan); err != nil {
				b.Fatal(err)
			}
		} else {
			cfg.Session.ID, cfg.Trace.Path = "s", filepath.Join(dir, "s.jsonl")
			if d, err = OpenLocal(st, cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.Cleanup(func() { d.Close() })
		if _, err := d.Begin(ctx); err != nil {
			b.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name    string
		indexed bool
	}{{"journal", false}, {"journal+index", true}, {"journal-again", false}, {"journal+index-again", true}} {
		b.Run(tc.name, func(b *testing.B) {
			d := open(b, tc.indexed)
			for b.Loop() {
				for _, line := range []string{"greet name=Ada style=formal", "again"} {
					out, err := d.Take(ctx, Line(line))
					if err != nil || out.Outcome != "transitioned" {
						b.Fatalf("%s: %v %+v", line, err, out)
					}
				}
			}
		})
	}
}
