package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Appends through a directory a goroutine keeps swapping for a symlink to
// outside the workspace never land outside (issue 28: 198 of 2000
// host.artifacts_dir appends did, checked and then opened by name).
func TestAppendsUnderASwappingSymlink(t *testing.T) {
	a, _ := newHandlers(t)
	outside := t.TempDir()
	dir, err := a.SessionDir("s1")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := testkit.SwapSymlink(t, filepath.Join(dir, "sw"), in, outside)
	var wrote, refused int
	for i := range 10_000 {
		op, name := a.write, DirName
		if i%2 == 1 {
			op, name = a.append, AppendName
		}
		args := map[string]any{"thread": "sw/log.md", "file": "sw/log.md", "body": "chunk"}
		res, err := op(context.Background(), call(name, "s1", args))
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil {
			refused++
		} else {
			wrote++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d appends written, %d refused", flips, wrote, refused)
	if _, err := os.Stat(filepath.Join(outside, "log.md")); err == nil {
		t.Fatal("an append landed outside the workspace")
	}
	if wrote == 0 || refused == 0 {
		t.Errorf("the swap was not exercised: %d written, %d refused", wrote, refused)
	}
}
