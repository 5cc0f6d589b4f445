package project

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A project file holding an alias bomb (issue 28) is refused at parse,
// before anything walks it.
func TestAliasBombRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, File, "story_dirs: [stories]\n"+testkit.AliasBomb())
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("want the alias-expansion error, got %v", err)
	}
}
