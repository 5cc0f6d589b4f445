//go:build unix

package ci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// host.local's run_tests in a with.workdir that a goroutine keeps swapping
// for a symlink to outside the workspace never runs its command outside
// it: the command is started in the directory opened through the
// workspace root (workspace.Root.CommandDir, as host.run's), not its path.
func TestWorkdirUnderASwappedDirectory(t *testing.T) {
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
	hd := newHandler(t, dir)
	stop := testkit.SwapDir(t, work, outside)
	var in, failed, escaped int
	for range 300 {
		r := invoke(hd, "run_tests", map[string]any{"test_cmd": "cat where", "workdir": "work"})
		log, _ := r.Data["log"].(string)
		switch {
		case r.Err != nil || r.Data["ok"] != true:
			failed++
			if strings.Contains(log, outside) {
				escaped++
			}
		case strings.HasPrefix(log, dir):
			in++
		default:
			escaped++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d runs inside, %d refused", flips, in, failed)
	if escaped > 0 {
		t.Errorf("%d of 300 test commands ran outside the workspace", escaped)
	}
	if in == 0 || failed == 0 {
		t.Errorf("the swap was not exercised: %d inside, %d refused", in, failed)
	}
}
