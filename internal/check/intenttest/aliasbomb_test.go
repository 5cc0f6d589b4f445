package intenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// An alias bomb (issue 28) is refused at parse with the expansion error,
// before anything walks it.
func TestAliasBombRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intents.yaml")
	if werr := os.WriteFile(p, []byte(testkit.AliasBomb()), 0o644); werr != nil {
		t.Fatal(werr)
	}
	_, err := Load(p, nil)
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("want the alias-expansion error, got %v", err)
	}
}

// An intents fixture file holding an alias bomb is refused the same way.
func TestAliasBombFixtureRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fixtures.yaml")
	if werr := os.WriteFile(p, []byte("test_kind: intents\n"+testkit.AliasBomb()), 0o644); werr != nil {
		t.Fatal(werr)
	}
	_, err := LoadFixtures(p, nil)
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("want the alias-expansion error, got %v", err)
	}
}
