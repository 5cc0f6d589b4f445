//go:build unix

package outfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteFileIsPrivateAndAtomic(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() != Dir {
			t.Errorf("%s: %v, want %v", d, fi.Mode().Perm(), Dir)
		}
	}
	p := filepath.Join(dir, "f.html")
	os.WriteFile(p, []byte("old"), 0o644)
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if fi.Mode().Perm() != File || string(b) != "new" {
		t.Errorf("mode %v content %q", fi.Mode().Perm(), b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	err := WriteFile(filepath.Join(dir, "missing", "f"), nil)
	var pe *fs.PathError
	if err == nil || !os.IsNotExist(err) || !errorsAs(err, &pe) || pe.Op != "open" {
		t.Errorf("into a missing directory: %v", err)
	}
	if err := WriteFile(os.DevNull, []byte("x")); err != nil {
		t.Errorf("a device is written in place: %v", err)
	}
}

func errorsAs(err error, pe **fs.PathError) bool {
	p, ok := err.(*fs.PathError)
	*pe = p
	return ok
}
