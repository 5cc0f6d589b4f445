package traceview

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

// TestReportGolden: the report of a recorded run (stories/hello replayed
// from its cassette with recorded durations, tokens and costs) and of a
// run with every kind of failure, plain and coloured.
func TestReportGolden(t *testing.T) {
	for _, tc := range []struct {
		trace, golden string
		o             ReportOptions
	}{
		{"hello-run.jsonl", "hello-run.show.golden", ReportOptions{}},
		{"failures.jsonl", "failures.show.golden", ReportOptions{}},
		{"failures.jsonl", "failures.color.golden", ReportOptions{Color: true}},
		{"failures.jsonl", "failures.full.golden", ReportOptions{Full: true}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r, err := Load(filepath.Join("testdata", tc.trace))
			if err != nil {
				t.Fatal(err)
			}
			r.Path = tc.trace
			var buf bytes.Buffer
			if err := Report(&buf, r, tc.o); err != nil {
				t.Fatal(err)
			}
			if !tc.o.Color && bytes.Contains(buf.Bytes(), []byte("\x1b[")) {
				t.Error("colour codes without Color")
			}
			golden(t, tc.golden, buf.Bytes())
		})
	}
}

func TestBuildFailures(t *testing.T) {
	r, err := Load("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{Turns: 3, AgentCalls: 2, HostCalls: 1, InputTokens: 120, OutputTokens: 8, CostUSD: 0.0002,
		Errors: 3, ErrorKinds: map[string]int{"schema_invalid": 1, "rejected": 1, "fault": 1}, DurationMS: 20004}
	if d := cmp.Diff(want, r.Totals); d != "" {
		t.Errorf("totals (-want +got):\n%s", d)
	}
	t1 := r.Turns[1]
	var host *Call
	for _, it := range t1.Items {
		if it.Call != nil && it.Call.Type == "host" {
			host = it.Call
		}
	}
	if host == nil || len(host.Children) != 1 {
		t.Fatalf("turn 1: host call with one agent call expected, got %+v", host)
	}
	a := host.Children[0]
	if a.Schema != "invalid" || a.ErrorKind != "schema_invalid" || a.DurationMS != 2200 || len(a.SubEvents) != 1 || a.SubEvents[0].Kind != "tool.used" {
		t.Errorf("agent call = %+v", a)
	}
	if len(host.World) != 1 || host.World[0].Key != "last_error" {
		t.Errorf("binds of the host call = %+v", host.World)
	}
	if r.State != "triage" {
		t.Errorf("state = %q", r.State)
	}
}

func TestLoadPartialLine(t *testing.T) {
	b, err := os.ReadFile("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	cut := bytes.Index(b, []byte(`{"turn":2,"seq":0`))
	if err := os.WriteFile(path, append(b[:cut:cut], []byte(`{"turn":2,"seq":0,"ts":"2026-`)...), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Turns) != 2 {
		t.Errorf("turns = %d, want 2 (the torn line is not read yet)", len(r.Turns))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(bad, []byte("{\"kind\":\"turn.start\"}\n"), 0o644)
	for _, tc := range []struct{ path, want string }{
		{empty, empty + ": the trace is empty (no session.header yet)"},
		{bad, bad + ": trace missing session.header on line 1"},
	} {
		_, err := Load(tc.path)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Load(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestSessionTrace(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"20261201T100000Z-aaaa.jsonl", "20261201T100000Z-aabb.jsonl", "20261202T090000Z-cccc.jsonl"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o644)
	}
	for _, tc := range []struct{ arg, want, err string }{
		{"20261202", filepath.Join(dir, "20261202T090000Z-cccc.jsonl"), ""},
		{"20261201T100000Z-aaaa", filepath.Join(dir, "20261201T100000Z-aaaa.jsonl"), ""},
		{"20261201T100000Z-aa", "", "20261201T100000Z-aa: more than one session begins so: 20261201T100000Z-aaaa, 20261201T100000Z-aabb (give more of the id)"},
		{"nope", "", "nope: no such trace file, and no session of that id in " + dir + " (kitsoki run writes " + filepath.Join(dir, "<session>.jsonl") + ")"},
		{"missing/x.jsonl", "", "missing/x.jsonl: no such trace file, and no session of that id in " + dir + " (kitsoki run writes " + filepath.Join(dir, "<session>.jsonl") + ")"},
	} {
		got, err := SessionTrace(tc.arg, dir)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("SessionTrace(%q) error = %v, want %q", tc.arg, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SessionTrace(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
	if !strings.HasSuffix(filepath.Join(dir, "x"), "x") {
		t.Fatal("unreachable")
	}
}

// A header that names the session (kitsoki writes one since durable
// sessions) gets a second line; an old header gets none.
func TestHeaderNamesTheSession(t *testing.T) {
	var b strings.Builder
	WriteHeader(&b, &Run{Path: "t.jsonl", SchemaVersion: 1, WrittenAt: "w",
		Session: trace.HeaderInfo{SessionID: "s-1", AppID: "hello", StoryPath: "stories/hello/app.yaml", KitsokiVersion: "v1.2.3"}}, ReportOptions{})
	want := "trace t.jsonl (schema 1, written w)\nsession s-1 of hello (stories/hello/app.yaml), kitsoki v1.2.3\n"
	if b.String() != want {
		t.Errorf("header:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteHeader(&b, &Run{Path: "t.jsonl", SchemaVersion: 1, WrittenAt: "w"}, ReportOptions{})
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("an old header printed %q", b.String())
	}
}
