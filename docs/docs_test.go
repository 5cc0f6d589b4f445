package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Markdown page under docs/ is embedded, with a title.
func TestEveryPageIsEmbedded(t *testing.T) {
	embedded := map[string]bool{}
	for _, p := range Pages() {
		embedded[p.File] = true
		if p.Title == "" {
			t.Errorf("%s has no # heading", p.File)
		}
		if data, err := Read(p.Topic); err != nil || len(data) == 0 {
			t.Errorf("Read(%q): %v", p.Topic, err)
		}
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		if !embedded[filepath.ToSlash(p)] {
			t.Errorf("%s is not embedded: add its folder to the go:embed line in docs.go", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tutorial", "llm-guide", "stories", "agents/claude"} {
		if !embedded[want+".md"] {
			t.Errorf("no page %s", want)
		}
	}
	if _, err := os.Stat("tutorial.md"); err != nil {
		t.Fatal(err)
	}
}
