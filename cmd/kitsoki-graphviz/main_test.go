package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		in     string
		code   int
		out    string // prefix
		stderr string // prefix
	}{
		{"svg", []string{"svg"}, `digraph { a -> b [label="go"] }`, 0, "<?xml", ""},
		{"png", []string{"png"}, `digraph { a -> b }`, 0, "\x89PNG", ""},
		{"no format", nil, "", 2, "", "usage: kitsoki-graphviz svg|png < graph.dot > image\n"},
		{"unknown format", []string{"gif"}, "", 2, "", "usage: kitsoki-graphviz svg|png"},
		{"bad DOT", []string{"svg"}, `digraph { a -> }`, 1, "", "kitsoki-graphviz: graphviz: parsing DOT: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.in), &out, &errb)
			if code != tc.code || !strings.HasPrefix(out.String(), tc.out) || !strings.HasPrefix(errb.String(), tc.stderr) {
				t.Errorf("exit %d, stdout %.20q, stderr %q; want %d, %q, %q", code, out.String(), errb.String(), tc.code, tc.out, tc.stderr)
			}
		})
	}
}
