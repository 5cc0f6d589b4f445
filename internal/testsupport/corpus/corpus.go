// Package corpus finds Kitsoki's compatibility corpus (the project's shared
// directory, ../shared/kitsoki next to the repository) for tests that run
// its stories, and copies stories out of it: tests work on copies and never
// modify the shared tree. A test skips when the corpus is not there.
package corpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// EnvDir names the environment variable that points at the corpus's
// kitsoki directory (the one holding stories/ and handlers.md) directly.
const EnvDir = "KITSOKI_CORPUS"

// Dir returns the kitsoki directory of the shared tree: $KITSOKI_CORPUS,
// else ../shared/kitsoki beside the repository (or beside the directory
// holding a worktree of it); the test skips when there is none.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
	for _, up := range []string{"..", filepath.Join("..", "..")} {
		d := filepath.Join(repo, up, "shared", "kitsoki")
		if fi, err := os.Stat(filepath.Join(d, "stories", "stories")); err == nil && fi.IsDir() {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	t.Skip("Kitsoki's corpus is not here (../shared/kitsoki beside the repository; or set " + EnvDir + ")")
	return ""
}

// Stories is the corpus's stories directory (stories/stories).
func Stories(t testing.TB) string {
	t.Helper()
	return filepath.Join(Dir(t), "stories", "stories")
}

// Copy copies the named stories (directories of stories/stories) under
// dst, each to dst/<name>.
func Copy(t testing.TB, dst string, names ...string) {
	t.Helper()
	src := Stories(t)
	for _, name := range names {
		copyTree(t, filepath.Join(src, name), filepath.Join(dst, name))
	}
}

// CopyApp copies the story directory at rel, a path under the corpus's
// repository root (stories/, such as "testdata/apps/cloak"), to
// dst/<its base name> and returns that directory.
func CopyApp(t testing.TB, dst, rel string) string {
	t.Helper()
	to := filepath.Join(dst, filepath.Base(rel))
	copyTree(t, filepath.Join(Dir(t), "stories", filepath.FromSlash(rel)), to)
	return to
}

// copyTree copies the regular files and directories under from to to
// (writable, whatever the shared tree's modes).
func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy story %s: %v", from, err)
	}
}
