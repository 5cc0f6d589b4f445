package toolserver

import (
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// catalogTool is a plugin tool targeting surfaces, at a version.
func catalogTool(name, version string, surfaces ...Surface) CatalogTool {
	return CatalogTool{Tool: Tool{Def: pluginTool(name), Handler: okHandler, Version: version},
		Plugin: "agent.test", Surfaces: surfaces}
}

func liveSession(t testing.TB, h *HTTPServer, surface Surface, cat *Catalog) *Session {
	t.Helper()
	return open(t, h, SessionConfig{Profile: mustProfile(t, surface, nil), RunID: "run-1", SessionID: "call-1",
		Live: newFakeLive(), Catalog: cat})
}

// pluginNames lists the names starting with kitsoki_.
func pluginNames(names []string) []string {
	var out []string
	for _, n := range names {
		if len(n) > 8 && n[:8] == "kitsoki_" {
			out = append(out, n)
		}
	}
	return out
}

func TestCatalogSnapshotsAreSortedAndNumbered(t *testing.T) {
	c := NewCatalog(nil)
	if c.Current().Revision != 0 || c.Current().Generation != c.Generation() {
		t.Fatalf("a new catalog starts at revision 0 of its generation, got %+v", c.Current())
	}
	s1, err := c.Publish([]CatalogTool{catalogTool("kitsoki_b_x", "1", KanbanTask), catalogTool("kitsoki_a_x", "1", OfficeTask)})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := c.Publish(nil)
	if diff := cmp.Diff([]string{"kitsoki_a_x", "kitsoki_b_x"}, s1.Names()); diff != "" {
		t.Errorf("snapshot order (-want +got):\n%s", diff)
	}
	if s1.Revision != 1 || s2.Revision != 2 || s1.Generation != s2.Generation {
		t.Errorf("revisions %d, %d (generations %s, %s), want 1 and 2 of one generation", s1.Revision, s2.Revision, s1.Generation, s2.Generation)
	}
	if other := NewCatalog(nil); other.Generation() == c.Generation() {
		t.Errorf("two catalogs share generation %s; each kitsoki start needs a new one", c.Generation())
	}
	if _, err := c.Publish([]CatalogTool{catalogTool("kitsoki_a_x", "1", KanbanTask), catalogTool("kitsoki_a_x", "2", KanbanTask)}); err == nil {
		t.Error("publishing one name twice succeeded")
	}
}

func TestCatalogReachesLiveSessionsFilteredBySurface(t *testing.T) {
	h := listen(t)
	c := NewCatalog(nil)
	if _, err := c.Publish([]CatalogTool{catalogTool("kitsoki_p_both", "1", KanbanTask, OfficeTask)}); err != nil {
		t.Fatal(err)
	}
	kanban := liveSession(t, h, KanbanTask, c)
	office := liveSession(t, h, OfficeTask, c)
	config := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil), Catalog: c})
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			kc := connect(t, kanban.URL(), kanban.Token(), gen)
			oc := connect(t, office.URL(), office.Token(), gen)
			if diff := cmp.Diff([]string{"kitsoki_p_both"}, pluginNames(mcptest.ToolNames(t, kc))); diff != "" {
				t.Errorf("a new session starts from the current snapshot (-want +got):\n%s", diff)
			}
			rev := c.Current().Revision
			_, err := c.Publish([]CatalogTool{
				catalogTool("kitsoki_p_both", "1", KanbanTask, OfficeTask),
				catalogTool("kitsoki_p_kanban", "1", KanbanTask),
			})
			if err != nil {
				t.Fatal(err)
			}
			mcptest.ExpectChanged(t, kc.Changed, 1)
			mcptest.ExpectChanged(t, oc.Changed, 0) // the office set did not change
			if diff := cmp.Diff([]string{"kitsoki_p_both", "kitsoki_p_kanban"}, pluginNames(mcptest.ToolNames(t, kc))); diff != "" {
				t.Errorf("kanban session (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"kitsoki_p_both"}, pluginNames(mcptest.ToolNames(t, oc))); diff != "" {
				t.Errorf("office session (-want +got):\n%s", diff)
			}
			if got := kanban.AppliedCatalog().Revision; got != rev+1 {
				t.Errorf("kanban applied revision %d, want %d", got, rev+1)
			}
			// Back to one tool for the next generation's run.
			if _, err := c.Publish([]CatalogTool{catalogTool("kitsoki_p_both", "1", KanbanTask, OfficeTask)}); err != nil {
				t.Fatal(err)
			}
			mcptest.ExpectChanged(t, kc.Changed, 1)
		})
	}
	if got := pluginNames(config.ToolNames()); got != nil {
		t.Errorf("the configuration surface lists plugin tools %v", got)
	}
}

// TestCatalogIgnoresOlderSnapshot delivers two snapshots of one generation
// in the wrong order: the older one must not restore a removed tool, and
// must not send a notification.
func TestCatalogIgnoresOlderSnapshot(t *testing.T) {
	h := listen(t)
	s := liveSession(t, h, KanbanTask, nil)
	tc := connect(t, s.URL(), s.Token(), modern)
	gen := "gen-1"
	withTool := &CatalogSnapshot{Generation: gen, Revision: 1, Tools: []CatalogTool{catalogTool("kitsoki_p_tag", "1", KanbanTask)}}
	without := &CatalogSnapshot{Generation: gen, Revision: 2}
	// Sessions without a catalog apply pushed snapshots all the same.
	if !s.ApplyCatalog(without) {
		t.Fatal("revision 2 was not applied")
	}
	mcptest.ExpectChanged(t, tc.Changed, 0) // nothing changed: the session had no plugin tools
	if s.ApplyCatalog(withTool) {
		t.Error("revision 1 was applied after revision 2")
	}
	mcptest.ExpectChanged(t, tc.Changed, 0)
	if got := pluginNames(mcptest.ToolNames(t, tc)); got != nil {
		t.Errorf("the stale snapshot restored %v", got)
	}
	if s.ApplyCatalog(without) {
		t.Error("revision 2 was applied twice")
	}
	// A new generation (kitsoki restarted) is applied whatever its revision.
	if !s.ApplyCatalog(&CatalogSnapshot{Generation: "gen-2", Revision: 1, Tools: withTool.Tools}) {
		t.Error("a snapshot of a new generation was refused")
	}
	mcptest.ExpectChanged(t, tc.Changed, 1)
	if diff := cmp.Diff([]string{"kitsoki_p_tag"}, pluginNames(mcptest.ToolNames(t, tc))); diff != "" {
		t.Errorf("after the new generation (-want +got):\n%s", diff)
	}
}

// TestCatalogConcurrentPublishes publishes from many goroutines at once,
// so deliveries race; every session must end on the last revision.
func TestCatalogConcurrentPublishes(t *testing.T) {
	h := listen(t)
	c := NewCatalog(nil)
	sessions := []*Session{liveSession(t, h, KanbanTask, c), liveSession(t, h, OfficeTask, c)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "kitsoki_p_" + string(rune('a'+i))
			if _, err := c.Publish([]CatalogTool{catalogTool(name, "1", KanbanTask, OfficeTask)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	last := c.Current()
	for _, s := range sessions {
		if got := s.AppliedCatalog(); got.Revision != last.Revision {
			t.Errorf("session applied revision %d, want the last one, %d", got.Revision, last.Revision)
		}
		if got := pluginNames(s.ToolNames()); !slices.Equal(got, last.Names()) {
			t.Errorf("session offers %v, want %v", got, last.Names())
		}
	}
}

func TestCatalogForgetsClosedSessions(t *testing.T) {
	h := listen(t)
	c := NewCatalog(nil)
	s := liveSession(t, h, KanbanTask, c)
	if c.Sessions() != 1 {
		t.Fatalf("%d sessions attached, want 1", c.Sessions())
	}
	s.Close()
	if c.Sessions() != 0 {
		t.Errorf("%d sessions attached after Close, want 0", c.Sessions())
	}
	if s.ApplyCatalog(&CatalogSnapshot{Generation: c.Generation(), Revision: 9}) {
		t.Error("a closed session applied a snapshot")
	}
}
