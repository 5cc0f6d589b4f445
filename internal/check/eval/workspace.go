package eval

import (
	"bytes"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// CheckOption configures Check and CheckDataset.
type CheckOption func(*checkOptions)

type checkOptions struct {
	workspace string
}

// WithWorkspace sets the workspace the dataset, the story it names and
// every file that story reads must stay inside (the --workspace flag).
// Without it the workspace is the story's own (the git work tree enclosing
// the dataset's app:, else the app's directory), and the dataset must lie
// inside it: a dataset cannot point kitsoki at a file outside its own
// workspace.
func WithWorkspace(dir string) CheckOption {
	return func(o *checkOptions) { o.workspace = dir }
}

// confine checks the dataset and its app against the workspace and returns
// the workspace directory the story loads with.
func (d *Dataset) confine(explicit string) (string, error) {
	app := absPath(d.AppPath())
	where := d.Path
	if line, col := topKeyPos(d.Raw, "app"); line > 0 {
		where = fmt.Sprintf("%s:%d:%d", d.Path, line, col)
	}
	ws, err := workspace.For(app, explicit)
	if err != nil {
		return "", fmt.Errorf("%s: app: %w", where, err)
	}
	if explicit != "" {
		if _, err := ws.Resolve("", app); err != nil {
			return "", fmt.Errorf("%s: app: %w", where, renamed(err, d.App))
		}
	}
	if _, err := ws.Resolve("", absPath(d.Path)); err != nil {
		if explicit != "" {
			return "", fmt.Errorf("%s: dataset %w", d.Path, renamed(err, d.Path))
		}
		return "", fmt.Errorf("%s: app: %q names a story whose workspace %s does not hold this dataset (widen the workspace with --workspace DIR)",
			where, d.App, ws.Dir())
	}
	return ws.Dir(), nil
}

// topKeyPos is where the value of a top-level key is written in a YAML
// document (0, 0 when it is not found).
func topKeyPos(raw []byte, key string) (int, int) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(raw)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return 0, 0
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return 0, 0
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Line, m.Content[i+1].Column
		}
	}
	return 0, 0
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// renamed names the path in a workspace.OutsideError as the dataset wrote
// it.
func renamed(err error, name string) error {
	if oe, ok := err.(*workspace.OutsideError); ok {
		c := *oe
		c.Name = name
		return &c
	}
	return err
}
