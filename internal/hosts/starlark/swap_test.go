package starlark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// ctx.fs.read of a path whose directory a goroutine keeps swapping for a
// symlink to outside the workspace never returns the outside file (issue
// 28: 30 of 1500 reads did, checked and then opened by name).
func TestFSReadUnderASwappingSymlink(t *testing.T) {
	f := newFixture(t)
	f.write("data/in.txt", "inside")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "in.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.script("read", "def main(ctx):\n    return {'v': ctx.fs.read('data/in.txt')}\n", "")
	stop := testkit.SwapDir(t, filepath.Join(f.ws, "data"), outside)
	h := New(f.st, Options{})
	var in, refused, escaped int
	for range 10_000 {
		data, got := outcome(t, h, call(s, nil, nil))
		switch {
		case got == "" && data["v"] == "inside":
			in++
		case got == "":
			escaped++
		case strings.Contains(got, "ctx.fs.read"):
			refused++ // out of the workspace, or met mid-swap (missing, not a directory)
		default:
			t.Fatalf("error %q", got)
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
