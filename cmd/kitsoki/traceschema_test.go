package main

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/schema"
)

// TestTraceLinesMatchTheSchema runs the demo from its cassette and checks
// every line of the trace against schemas/trace-event.schema.json, the
// published description of the format.
func TestTraceLinesMatchTheSchema(t *testing.T) {
	c, err := schema.NewCompiler("../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sch, err := c.Compile("trace-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--cassette", "../../stories/hello/cassettes/demo.yaml",
		"--intents", "greet name=Ada style=formal,again,greet name=Grace,bye"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := os.Open(tr)
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
			t.Errorf("line %d: %v\n%s", n, err, sc.Text())
		}
	}
	if n < 20 {
		t.Errorf("only %d lines checked", n)
	}
}
