package ticket

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Reads and comments on a ticket whose directory a goroutine keeps
// swapping for a symlink to outside the workspace never read or write the
// outside copy.
func TestTicketsUnderASwappedDirectory(t *testing.T) {
	tk, ws := newTickets(t)
	outside := t.TempDir()
	id := "2026-05-14-esc-hang"
	orig, err := os.ReadFile(filepath.Join(ws, "issues", "bugs", id+".md"))
	if err != nil {
		t.Fatal(err)
	}
	fake := strings.Replace(string(orig), "title: TUI hangs on ESC", "title: OUTSIDE", 1)
	if err := os.WriteFile(filepath.Join(outside, id+".md"), []byte(fake), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := testkit.SwapDir(t, filepath.Join(ws, "issues", "bugs"), outside)
	var ok, failed, escaped int
	for i := range 2000 {
		if i%2 == 0 {
			r := do(t, tk, "get", map[string]any{"id": id})
			switch {
			case r.Err != nil:
				failed++
			case r.Data["title"] == "OUTSIDE":
				escaped++
			default:
				ok++
			}
			continue
		}
		if r := do(t, tk, "comment", map[string]any{"id": id, "thread": id, "body": "x"}); r.Err != nil {
			failed++
		} else {
			ok++
		}
	}
	flips := stop()
	t.Logf("%d flips: %d calls done, %d refused", flips, ok, failed)
	if escaped > 0 {
		t.Errorf("%d reads returned the outside ticket", escaped)
	}
	got, err := os.ReadFile(filepath.Join(outside, id+".md"))
	if err != nil || string(got) != fake {
		t.Errorf("the outside ticket was changed (err %v)", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files were written outside: %v", ents)
	}
	if ok == 0 || flips == 0 {
		t.Errorf("the swap was not exercised: %d flips, %d calls done", flips, ok)
	}
}
