package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

func TestInsideTheWorkspaceOnly(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.New(filepath.Join(root))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	f := New(ws)
	p := filepath.Join(ws.Dir(), "a", "b.json")
	if err := f.WriteFile(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFile(p); err != nil || string(b) != "two" {
		t.Errorf("read %q %v", b, err)
	}
	if es, _ := os.ReadDir(filepath.Dir(p)); len(es) != 1 {
		t.Errorf("a temporary file was left: %v", es)
	}
	if err := f.CreateExclusive(p, []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateExclusive over a file: %v", err)
	}
	for _, bad := range []string{filepath.Join(outside, "x"), filepath.Join(ws.Dir(), "..", "x"), filepath.Join(ws.Dir(), "out", "x")} {
		if err := f.WriteFile(bad, []byte("x")); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("WriteFile(%s): %v", bad, err)
		}
		if _, err := f.ReadFile(bad); err == nil {
			t.Errorf("ReadFile(%s) read outside the workspace", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	if err := f.RemoveAll(ws.Dir()); err == nil {
		t.Error("RemoveAll of the workspace itself was not refused")
	}
	if _, err := (FS{}).ReadFile(p); !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("no workspace: %v", err)
	}
}
