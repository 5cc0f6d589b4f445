package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// includeTag marks a value to be replaced by a file's content.
const includeTag = "!include"

// expandIncludes replaces every `key: !include rel/path` value under n by
// the file's content: a .json file is inlined as its (compact) JSON value,
// any other file as a string. Paths are relative to dir; absolute paths and
// paths that leave dir (also through symlinks) are refused. The tag is only
// allowed on the value side of a mapping or as a list item.
func expandIncludes(n *yaml.Node, dir string) error {
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	open := func() (*os.Root, error) {
		if root == nil {
			r, err := os.OpenRoot(dir)
			if err != nil {
				return nil, err
			}
			root = r
		}
		return root, nil
	}
	var walk func(n *yaml.Node) error
	expand := func(v *yaml.Node) error {
		if v.Tag != includeTag {
			return walk(v)
		}
		r, err := open()
		if err != nil {
			return yamlnode.At(v, "", "!include %q: %w", v.Value, err)
		}
		repl, err := includeNode(r, v)
		if err != nil {
			return err
		}
		*v = *repl
		return nil
	}
	walk = func(n *yaml.Node) error {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if err := expand(c); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Tag == includeTag {
					return yamlnode.At(k, "", "!include is only allowed on the value side (key %q)", k.Value)
				}
				if err := expand(n.Content[i+1]); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				if err := expand(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(n)
}

// includeNode reads the file an !include names and returns its node.
func includeNode(root *os.Root, v *yaml.Node) (*yaml.Node, error) {
	where := fmt.Sprintf("!include %q", v.Value)
	if v.Kind != yaml.ScalarNode || strings.TrimSpace(v.Value) == "" {
		return nil, yamlnode.At(v, "", "!include needs a file path relative to the cassette")
	}
	p := v.Value
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return nil, yamlnode.At(v, "", "%s: absolute paths are not allowed; write a path relative to the cassette's directory", where)
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return nil, yamlnode.At(v, "", "%s: the path leaves the cassette's directory", where)
	}
	b, err := root.ReadFile(filepath.FromSlash(p))
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return nil, yamlnode.At(v, "", "%s: the path leaves the cassette's directory (through a symlink)", where)
		}
		return nil, yamlnode.At(v, "", "%s: %w", where, err)
	}
	if strings.EqualFold(filepath.Ext(p), ".json") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return nil, yamlnode.At(v, "", "%s: not valid JSON: %w", where, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(buf.Bytes(), &doc); err != nil || len(doc.Content) != 1 {
			return nil, yamlnode.At(v, "", "%s: cannot inline the JSON: %v", where, err)
		}
		out := doc.Content[0]
		out.Line, out.Column = v.Line, v.Column
		return out, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(b), Style: yaml.DoubleQuotedStyle, Line: v.Line, Column: v.Column}, nil
}
