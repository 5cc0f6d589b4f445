package toolserver

import (
	"fmt"
	"log/slog"
	"testing"
)

// BenchmarkProfileAssembly measures profile assembly plus the atomic
// replacement of a 40-tool set (the built-in groups of a kanban-task
// profile with every capability and provider, filled up to 40 with
// plugin-contributed tools), alternating between two profiles so every
// iteration really replaces the set and notifies a connected client.
// Target: under 200 µs.
func BenchmarkProfileAssembly(b *testing.B) {
	full := mustProfile(b, KanbanTask, []Capability{UserQuestion, TaskTitle}, StoryFilesProvider)
	other := mustProfile(b, KanbanTask, []Capability{ParentQuestion, TaskTitle}, StoryFilesProvider)
	var plugins []Tool
	catalog := func(Surface) []Tool { return plugins }
	s, err := NewSession(SessionConfig{Profile: full, Live: newFakeLive(), StoryDir: testRoot(b), PluginTools: catalog})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	builtins := len(s.ToolNames())
	for i := builtins; i < 40; i++ {
		plugins = append(plugins, Tool{Def: pluginTool(fmt.Sprintf("kitsoki_agent_bench_tool_%02d", i)), Handler: okHandler})
	}
	s.Refresh()
	if n := len(s.ToolNames()); n != 40 {
		b.Fatalf("%d tools, want 40", n)
	}
	// The client stops reading at the end while thousands of list_changed
	// notifications are still queued; the server's drain errors are noise.
	h, err := ListenHTTP("", slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() }) // after the client's cleanup, as listen does
	hs, err := h.Open(SessionConfig{Profile: full, Live: newFakeLive(), StoryDir: testRoot(b), PluginTools: catalog})
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Close()
	c := connect(b, hs.URL(), hs.Token(), modern)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-c.Changed:
			case <-stop:
				return
			}
		}
	}()
	profiles := [2]Profile{other, full}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		changed, err := hs.SetProfile(profiles[i%2])
		if err != nil || !changed {
			b.Fatalf("changed=%v err=%v", changed, err)
		}
	}
}

// BenchmarkCatalogChange measures the rarer replacement that brings new
// definitions: every plugin tool of a 40-tool set changes version, so the
// definitions are re-encoded and installed with the server's SetTools
// (which re-reads every schema).
func BenchmarkCatalogChange(b *testing.B) {
	p := mustProfile(b, KanbanTask, []Capability{UserQuestion, TaskTitle}, StoryFilesProvider)
	version := 0
	var catalog []Tool
	source := func(Surface) []Tool {
		for i := range catalog {
			catalog[i].Version = fmt.Sprint(version)
		}
		return catalog
	}
	s, err := NewSession(SessionConfig{Profile: p, Live: newFakeLive(), StoryDir: testRoot(b), PluginTools: source})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := len(s.ToolNames()); i < 40; i++ {
		catalog = append(catalog, Tool{Def: pluginTool(fmt.Sprintf("kitsoki_agent_bench_tool_%02d", i)), Handler: okHandler})
	}
	s.Refresh()
	if n := len(s.ToolNames()); n != 40 {
		b.Fatalf("%d tools, want 40", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		version++
		if !s.Refresh() {
			b.Fatal("no change")
		}
	}
}
