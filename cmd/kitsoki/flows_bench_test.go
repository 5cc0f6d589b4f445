package main

import (
	"io"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/longflow"
)

// BenchmarkTestFlows1000Turns is `kitsoki test flows` (the whole command,
// in process) on a 1,000-turn flow whose 500 agent calls replay from a
// cassette (strict coverage, every greeting's world checked).
func BenchmarkTestFlows1000Turns(b *testing.B) {
	app := longflow.Write(b, 1000)
	for b.Loop() {
		if code := run([]string{"test", "flows", app}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
