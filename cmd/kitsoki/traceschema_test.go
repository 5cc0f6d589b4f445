package main

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/schema"
)

// TestTraceLinesMatchTheSchema runs the demo from its cassette and checks
// every line of the trace against schemas/trace-event.schema.json, the
// published description of the format.
func TestTraceLinesMatchTheSchema(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--cassette", "../../stories/hello/cassettes/demo.yaml",
		"--intents", "greet name=Ada style=formal,again,greet name=Grace,bye"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := checkTraceSchema(t, tr); n < 20 {
		t.Errorf("only %d lines checked", n)
	}
}

// traceSchema compiles schemas/trace-event.schema.json.
func traceSchema(t *testing.T) *schema.Schema {
	t.Helper()
	c, err := schema.NewCompiler("../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sch, err := c.Compile("trace-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// checkTraceSchema validates every line of a trace file against
// schemas/trace-event.schema.json and returns how many lines it read.
func checkTraceSchema(t *testing.T, path string) int {
	t.Helper()
	sch := traceSchema(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if _, err := sch.ValidateJSON(sc.Bytes()); err != nil {
			t.Errorf("%s line %d does not match the schema: %v\n%s", path, n, err, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
