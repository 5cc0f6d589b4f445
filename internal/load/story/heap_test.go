package story

import (
	"os"
	"runtime"
	"testing"
)

// liveHeap loads the story at path and returns the heap it keeps live:
// HeapAlloc after a collection with the story held, less the heap before.
func liveHeap(tb testing.TB, path string, opts ...Option) float64 {
	tb.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := Load(path, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(st)
	st.Close()
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// BenchmarkLoadHeap loads the story named by KITSOKI_HEAP_STORY (skipped
// without it; the figure is Kitsoki's corpus story kitsoki-dev,
// with KITSOKI_REPO set to the corpus' stories directory) and reports the
// heap the loaded story keeps live (live-MB) besides the usual figures:
//
//	KITSOKI_HEAP_STORY=$PWD/../shared/kitsoki/stories/.kitsoki/stories/kitsoki-dev/app.yaml \
//	KITSOKI_REPO=$PWD/../shared/kitsoki/stories go test -run X -bench LoadHeap ./internal/load/story
func BenchmarkLoadHeap(b *testing.B) {
	path := os.Getenv("KITSOKI_HEAP_STORY")
	if path == "" {
		b.Skip("KITSOKI_HEAP_STORY names no story")
	}
	b.ReportAllocs()
	live := 0.0
	for b.Loop() {
		live = liveHeap(b, path, WithStubbedHosts())
	}
	b.ReportMetric(live/1e6, "live-MB")
}

// BenchmarkLoadStory loads the story named by KITSOKI_HEAP_STORY (skipped
// without it), for paired old-vs-new runs on a corpus story.
func BenchmarkLoadStory(b *testing.B) {
	path := os.Getenv("KITSOKI_HEAP_STORY")
	if path == "" {
		b.Skip("KITSOKI_HEAP_STORY names no story")
	}
	b.ReportAllocs()
	for b.Loop() {
		st, err := Load(path, WithStubbedHosts())
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}
