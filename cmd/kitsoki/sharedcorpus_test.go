package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// kitsokiApp copies one of Kitsoki's test apps (under
// shared/kitsoki/stories/testdata/apps, found beside the repository) into a
// temporary directory and returns its app.yaml; the test is skipped when
// the shared tree is not there.
func kitsokiApp(t *testing.T, name string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "kitsoki", "stories", "testdata", "apps", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			src = p
			break
		}
		if filepath.Dir(d) == d {
			t.Skipf("shared/kitsoki/stories/testdata/apps/%s is not beside the repository", name)
		}
	}
	dst := filepath.Join(t.TempDir(), name)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "app.yaml")
}
