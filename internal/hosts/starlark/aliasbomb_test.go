package starlark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// HTTP and inspect cassettes that are alias bombs (issue 28) are refused
// with the expansion error.
func TestAliasBombCassettesRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, kind string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("kind: "+kind+"\n"+testkit.AliasBomb()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, err := LoadCassette(write("http.yaml", CassetteKind), "")
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Errorf("http cassette: want the alias-expansion error, got %v", err)
	}
	_, err = LoadInspectCassette(write("inspect.yaml", InspectCassetteKind))
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Errorf("inspect cassette: want the alias-expansion error, got %v", err)
	}
}
