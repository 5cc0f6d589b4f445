package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTree(t *testing.T) {
	dir := Tree(t, map[string]string{
		"app.yaml":         "app: {id: x}\n",
		"deep/a/b.txt":     "b",
		"link.yaml":        "symlink:app.yaml",
		"deep/up/link.txt": "symlink:deep/a/b.txt",
	})
	if resolved, err := filepath.EvalSymlinks(dir); err != nil || resolved != dir {
		t.Errorf("Tree dir %q resolves to %q (%v); want it resolved already", dir, resolved, err)
	}
	for name, want := range map[string]string{"app.yaml": "app: {id: x}\n", "deep/a/b.txt": "b", "link.yaml": "app: {id: x}\n", "deep/up/link.txt": "b"} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.yaml")); err != nil {
		t.Error(err)
	} else if fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.yaml mode %v, want a symlink", fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(dir, "app.yaml")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o644 {
		t.Errorf("app.yaml mode = %v, want 0644", fi.Mode().Perm())
	}
}

func TestWriteFileAndCopyDir(t *testing.T) {
	src := t.TempDir()
	if p := WriteFile(t, src, "a/b/c.txt", "c"); p != filepath.Join(src, "a", "b", "c.txt") {
		t.Errorf("WriteFile path = %q", p)
	}
	WriteFile(t, src, "top.txt", "top")
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := CopyDir(t, src)
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh copied with mode %v, want 0755", fi.Mode().Perm())
	}
	got := map[string]string{}
	err := filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dst, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"a/b/c.txt": "c", "top.txt": "top", "run.sh": "#!/bin/sh\n"}, got); d != "" {
		t.Errorf("copy (-want +got):\n%s", d)
	}
}

func TestCopyDirMissingSourceFails(t *testing.T) {
	ft := &fatalT{TB: t}
	func() {
		defer func() { _ = recover() }()
		CopyDir(ft, filepath.Join(t.TempDir(), "missing"))
	}()
	if !ft.failed {
		t.Error("CopyDir of a missing source did not fail the test")
	}
}

// fatalT records Fatal instead of stopping the test.
type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Fatal(args ...any) { f.failed = true; panic("fatal") }
func (f *fatalT) Helper()           {}

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				if _, err := b.Write([]byte("x")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if got := len(b.String()); got != 400 {
		t.Errorf("len = %d, want 400", got)
	}
}
