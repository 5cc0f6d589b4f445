//go:build unix

package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A command whose with.cwd a goroutine keeps swapping for a symlink to
// outside the workspace never runs outside it: the directory is opened
// through the workspace root and the command changes into the directory
// opened, not into its path.
func TestCwdUnderASwappedDirectory(t *testing.T) {
	ws := newWS(t)
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws.Dir(), "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(ws.Dir(), "work"), outside} {
		if err := os.WriteFile(filepath.Join(d, "where"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hd := New(Config{Workspace: ws})
	stop := testkit.SwapDir(t, filepath.Join(ws.Dir(), "work"), outside)
	var in, failed, escaped int
	for range 1000 {
		res := invoke(t, hd, context.Background(), map[string]any{"cmd": "cat", "args": []any{"where"}, "cwd": "work"})
		out, _ := res.Data["stdout"].(string)
		switch {
		case res.Err != nil || res.Data["ok"] != true:
			failed++
		case strings.HasPrefix(out, ws.Dir()):
			in++
		default:
			escaped++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d runs inside, %d refused", flips, in, failed)
	if escaped > 0 {
		t.Errorf("%d of 1000 commands ran outside the workspace", escaped)
	}
	if in == 0 || failed == 0 {
		t.Errorf("the swap was not exercised: %d inside, %d refused", in, failed)
	}
}
