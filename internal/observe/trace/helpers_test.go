package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// t0 has a fractional second with trailing zeros to exercise Go's trimming.
var t0 = time.Date(2025, 1, 2, 9, 0, 0, 123400000, time.UTC)

const t0TS = "2025-01-02T09:00:00.1234Z"

// testSink is a sink under test plus a way to see what it recorded.
type testSink struct {
	name  string
	sink  Sink
	bytes func() []byte // the trace as on disk
}

func (ts testSink) events(t *testing.T) []Event {
	t.Helper()
	evs, err := Read(bytes.NewReader(ts.bytes()))
	if err != nil {
		t.Fatalf("%s: reading back: %v", ts.name, err)
	}
	return evs
}

// bothSinks returns a file Writer and a MemSink built with the same options.
func bothSinks(t *testing.T, opts ...Option) []testSink {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := Create(path, opts...)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	m := NewMemSink(opts...)
	return []testSink{
		{name: "file", sink: w, bytes: func() []byte { return mustRead(t, path) }},
		{name: "mem", sink: m, bytes: m.Bytes},
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fakeClock() *clock.Fake { return clock.NewFake(t0) }

func mustAppend(t *testing.T, s Sink, ev *Event) {
	t.Helper()
	if err := s.Append(ev); err != nil {
		t.Fatalf("Append(%s): %v", ev.Kind, err)
	}
}

// lines splits a trace into lines without their newlines.
func lines(b []byte) []string {
	var out []string
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(bytes.TrimSuffix(l, []byte("\n"))))
		}
	}
	return out
}
