package testrunner

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
	_, err := ParseFixtures([]byte("test_kind: flow\n"+testkit.AliasBomb()), "bomb.yaml", "app.yaml")
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("flow: want the alias-expansion error, got %v", err)
	}
	p := filepath.Join(t.TempDir(), "rec.yaml")
	if werr := os.WriteFile(p, []byte("kind: recording\n"+testkit.AliasBomb()), 0o644); werr != nil {
		t.Fatal(werr)
	}
	_, err = LoadRecording(p)
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("want the alias-expansion error, got %v", err)
	}
}
