package host

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The corpus form's with: map: every bad value is refused saying what is
// wanted.
func TestCorpusQueryErrors(t *testing.T) {
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"corpus": "docs/*.md"}, "with.query is required"},
		{map[string]any{"query": "q", "corpus": 3}, "with.corpus must be a glob or a list of globs"},
		{map[string]any{"query": "q", "corpus": []any{}}, "with.corpus is empty"},
		{map[string]any{"query": "q", "corpus": []any{""}}, "with.corpus[0] must be a glob"},
		{map[string]any{"query": "q", "corpus": "d", "top_k": 0}, "with.top_k must be a positive integer, got 0"},
		{map[string]any{"query": "q", "corpus": "d", "min_score": 2}, "with.min_score must be a cosine similarity from -1 to 1, got 2"},
		{map[string]any{"query": "q", "corpus": "d", "chunk": "big"}, "with.chunk must be a mapping {max, mode}"},
		{map[string]any{"query": "q", "corpus": "d", "chunk": map[string]any{"size": 3}}, `with.chunk: unknown key "size" (known: max, mode)`},
		{map[string]any{"query": "q", "corpus": "d", "chunk": map[string]any{"max": 10}}, "with.chunk.max must be a whole number of characters, at least 100, got 10"},
		{map[string]any{"query": "q", "corpus": "d", "chunk": map[string]any{"mode": "page"}}, "with.chunk.mode page: want one of heading, file"},
	}
	for _, tt := range tests {
		_, err := readCorpusQuery(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	q, err := readCorpusQuery(map[string]any{"query": "q", "corpus": []any{"a/**/*.md"}})
	if err != nil || q.topK != DefaultSearchTopK || q.max != DefaultChunkMax || q.mode != "heading" {
		t.Errorf("defaults: %+v %v", q, err)
	}
	if _, _, err := readCorpus(t.TempDir(), &corpusQuery{globs: []string{"../x/*.md"}}); err == nil || !strings.Contains(err.Error(), "must be relative to the workspace and stay inside it") {
		t.Errorf("a glob out of the workspace: %v", err)
	}
}

// Files are cut at headings (not inside code fences), and a section over
// max at line ends; a line over max is cut at max.
func TestCutFile(t *testing.T) {
	text := "preface\n# One\na\n```\n# fenced\n```\n## Two\n" + strings.Repeat("x", 250) + "\nshort\n"
	got := cutFile("d.md", text, &corpusQuery{max: 100, mode: "heading"})
	type c struct {
		Heading string
		Line    int
		Len     int
	}
	var out []c
	for _, ch := range got {
		out = append(out, c{ch.heading, ch.line, len(ch.text)})
	}
	want := []c{{"", 1, 7}, {"One", 2, 24}, {"Two", 7, 6}, {"Two", 8, 100}, {"Two", 8, 100}, {"Two", 8, 56}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
	if whole := cutFile("d.md", "# A\nb\n# C\n", &corpusQuery{max: 100, mode: "file"}); len(whole) != 1 {
		t.Errorf("file mode: %d chunks", len(whole))
	}
}
