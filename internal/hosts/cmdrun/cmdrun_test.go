//go:build unix

package cmdrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A tool with a workspace root (git, gh, an editor, the workspace manager:
// every tool a handler runs in a story-given directory) never runs in a
// directory a goroutine keeps swapping for a symlink out of the workspace;
// a directory outside the workspace is refused outright.
func TestToolDirUnderASwappedDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{work, outside} {
		if err := os.WriteFile(filepath.Join(d, "where"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	tool := Tool{Program: "cat", Root: ws}
	if _, err := tool.Run(context.Background(), outside, "where"); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
		t.Errorf("a directory outside the workspace: %v", err)
	}
	stop := testkit.SwapDir(t, work, outside)
	var in, failed, escaped int
	for range 1000 {
		out, err := tool.Run(context.Background(), work, "where")
		switch {
		case err != nil:
			failed++
		case strings.HasPrefix(out.Stdout, dir):
			in++
		default:
			escaped++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d runs inside, %d refused", flips, in, failed)
	if escaped > 0 {
		t.Errorf("%d of 1000 runs were outside the workspace", escaped)
	}
	if in == 0 || failed == 0 {
		t.Errorf("the swap was not exercised: %d inside, %d refused", in, failed)
	}
}
