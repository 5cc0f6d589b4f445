package toolserver

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// read_story_file_kitsoki's open of a path whose directory a goroutine
// keeps swapping for a symlink to outside the served directory never reads
// the outside file (an audit of issue 28 item 3: the tool checked the path
// with Confine and then read it by name).
func TestOpenConfinedUnderASwappedDirectory(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(root, "data"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop := testkit.SwapDir(t, filepath.Join(root, "data"), outside)
	var in, refused, escaped int
	for range 10_000 {
		f, err := OpenConfined(root, "data/f.txt")
		if err != nil {
			refused++
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		switch {
		case err != nil:
			refused++
		case string(b) == outside:
			escaped++
		default:
			in++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d reads inside, %d refused", flips, in, refused)
	if escaped > 0 {
		t.Errorf("%d of 10000 reads returned the outside file", escaped)
	}
	if in == 0 || refused == 0 {
		t.Errorf("the swap was not exercised: %d inside, %d refused", in, refused)
	}
}
