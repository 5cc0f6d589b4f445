package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestDecodeValue checks decodeValue against yaml's own Decode, on values
// it converts itself and on values it hands to Decode.
func TestDecodeValue(t *testing.T) {
	docs := []string{
		`plain`, `"quoted"`, `'single'`, `""`, `|` + "\n  block\n", `!!str 12`, `!!str true`,
		`12`, `-7`, `0`, `-0`, `007`, `0x1F`, `0o17`, `1_000`, `+5`, `123456789012345678`, `1234567890123456789012`,
		`1.5`, `.inf`, `1e3`, `true`, `false`, `True`, `FALSE`, `yes`, `on`,
		`~`, `null`, `Null`, ``, `!!null ""`,
		`2001-12-14`, `!!binary aGVsbG8=`, `!custom x`,
		`{a: 1, b: "{{ world.x }}", c: [x, 2, null, true], d: {e: f}}`,
		`{1: one, two: 2}`,
		`{a: 1, a: 2}`,
		`{<<: {a: 1}, b: 2}`,
		`[&x a, *x]`,
		`{k: &anchor v}`,
		`{args: {item: "{{ world.note + '-1' }}", notes: "{{ world.count + 1 }}"}, prompt: prompts/p1.md}`,
	}
	for _, src := range docs {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		n := deref(&doc)
		if n == nil {
			continue
		}
		var want any
		wantErr := n.Decode(&want)
		got, err := decodeValue(n)
		if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("%q: error %v, want %v", src, err, wantErr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: (-Decode +decodeValue):\n%s", src, diff)
		}
		if _, ok := plainValue(n); ok != direct[src] {
			t.Errorf("%q: converted directly = %v, want %v", src, ok, direct[src])
		}
	}
}

// direct are the values of TestDecodeValue that plainValue converts itself.
var direct = map[string]bool{
	`plain`: true, `"quoted"`: true, `'single'`: true, `""`: true, `|` + "\n  block\n": true, `!!str 12`: true,
	`!!str true`: true, `12`: true, `-7`: true, `0`: true, `123456789012345678`: true, `true`: true, `false`: true,
	`-0`: true, `yes`: true, `on`: true, `~`: true, `null`: true, `Null`: true, `!!null ""`: true,
	`{a: 1, b: "{{ world.x }}", c: [x, 2, null, true], d: {e: f}}`: true,
	`[&x a, *x]`:     false,
	`{k: &anchor v}`: true,
	`{args: {item: "{{ world.note + '-1' }}", notes: "{{ world.count + 1 }}"}, prompt: prompts/p1.md}`: true,
}
