package yamlnode

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func parse(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// The errors the cassette and fixture parsers show name the line and
// column, the key path and what was expected; InFile adds the file.
func TestFieldErrors(t *testing.T) {
	tests := []struct {
		name, src string
		read      func(m map[string]*yaml.Node) error
		want      string
	}{
		{"not a mapping", "- a\n", nil, "f.yaml:1:1: top: must be a mapping, got a list"},
		{"unknown key", "a: 1\nzz: 2\n", nil, `f.yaml:2:1: top.zz: unknown key "zz" (valid: a, b*)`},
		{"duplicate key", "a: 1\na: 2\n", nil, `f.yaml:2:1: top.a: key "a" appears twice`},
		{"string is a list", "a: [1]\n", func(m map[string]*yaml.Node) error { _, err := Str(m, "a", "top"); return err },
			"f.yaml:1:4: top.a: must be a string, got a list"},
		{"mapping is a scalar", "a: x\n", func(m map[string]*yaml.Node) error { _, _, err := Mapping(m, "a", "top"); return err },
			"f.yaml:1:4: top.a: must be a mapping, got a scalar"},
		{"mapping is null", "a: null\nb: ~\n", func(m map[string]*yaml.Node) error { _, _, err := Mapping(m, "a", "top"); return err }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Fields(parse(t, tt.src), "top", "a", "b*")
			if err == nil && tt.read != nil {
				err = tt.read(m)
			}
			got := ""
			if err != nil {
				got = InFile("f.yaml", err).Error()
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

// Values come back with string keys, and JSON keeps the written key order.
func TestValueAndJSON(t *testing.T) {
	n := parse(t, "z: 1\na: {1: x, k: [true, null]}\n")
	v, err := Value(n)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"z": 1, "a": map[string]any{"1": "x", "k": []any{true, nil}}}
	if d := cmp.Diff(want, v); d != "" {
		t.Errorf("Value (-want +got):\n%s", d)
	}
	j, err := JSON(n)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(j); got != `{"z":1,"a":{"1":"x","k":[true,null]}}` {
		t.Errorf("JSON = %s", got)
	}
	if got := string(TrimBOM([]byte("\xef\xbb\xbfa: 1"))); got != "a: 1" {
		t.Errorf("TrimBOM = %q", got)
	}
}
