package ticket

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A ticket whose front matter is an alias bomb (issue 28) is refused with
// the expansion error, naming the file.
func TestAliasBombFrontMatterRefused(t *testing.T) {
	tk, ws := newTickets(t)
	p := filepath.Join(ws, "issues", "bugs", "bomb.md")
	if err := os.WriteFile(p, []byte("---\ntitle: bomb\n"+testkit.AliasBomb()+"---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := do(t, tk, "get", map[string]any{"id": "bomb"})
	if r.Err == nil || !strings.Contains(r.Err.Error(), testkit.AliasBombError) || !strings.Contains(r.Err.Error(), "issues/bugs/bomb.md") {
		t.Fatalf("want the alias-expansion error naming the file, got %v", r.Err)
	}
}
