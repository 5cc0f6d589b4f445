package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Writes, reads and removals under a directory a goroutine keeps swapping
// for a symlink to outside the workspace never touch the outside (an
// audit of issue 28 item 3: hostfs, where the vcs, ci, chat and ide
// handlers touch files, checked a path and then opened it by name).
func TestOpsUnderASwappedDirectory(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := New(ws)
	outside := t.TempDir()
	for _, d := range []string{outside, filepath.Join(ws.Dir(), "data")} {
		if err := os.MkdirAll(filepath.Join(d, "tree"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep.txt"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(ws.Dir(), "data")
	stop := testkit.SwapDir(t, data, outside)
	var done, refused, escaped, removedOutside int
	for i := range 10_000 {
		var err error
		switch i % 5 {
		case 0:
			err = f.WriteFile(filepath.Join(data, "new.txt"), []byte("written"))
		case 1:
			err = f.CreateExclusive(filepath.Join(data, "excl.txt"), []byte("written"))
			_ = f.Remove(filepath.Join(data, "excl.txt"))
		case 2:
			var b []byte
			if b, err = f.ReadFile(filepath.Join(data, "keep.txt")); err == nil && string(b) == outside {
				escaped++
			}
		case 3:
			err = f.Remove(filepath.Join(data, "keep.txt"))
			if _, serr := os.Stat(filepath.Join(outside, "keep.txt")); serr != nil {
				removedOutside++
				_ = os.WriteFile(filepath.Join(outside, "keep.txt"), []byte(outside), 0o644)
			}
			_ = os.WriteFile(filepath.Join(data, "keep.txt"), []byte(data), 0o644)
		case 4:
			err = f.RemoveAll(filepath.Join(data, "tree"))
			if _, serr := os.Stat(filepath.Join(outside, "tree")); serr != nil {
				removedOutside++
				_ = os.MkdirAll(filepath.Join(outside, "tree"), 0o755)
			}
			_ = f.MkdirAll(filepath.Join(data, "tree"))
		}
		if err != nil {
			refused++
		} else {
			done++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d operations done, %d refused", flips, done, refused)
	if escaped > 0 {
		t.Errorf("%d reads returned the outside file", escaped)
	}
	if removedOutside > 0 {
		t.Errorf("%d removals removed an outside file or directory", removedOutside)
	}
	es, _ := os.ReadDir(outside)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("written outside the workspace: %v", names)
	}
	if done == 0 || refused == 0 {
		t.Errorf("the swap was not exercised: %d done, %d refused", done, refused)
	}
}
