package sidecar

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// An alias bomb (issue 28) is refused at parse with the expansion error,
// before anything walks it.
func TestAliasBombRefused(t *testing.T) {
	_, err := Parse([]byte("inputs: {}\n"+testkit.AliasBomb()), "bomb.star.yaml")
	if err == nil || !strings.Contains(err.Error(), testkit.AliasBombError) {
		t.Fatalf("want the alias-expansion error, got %v", err)
	}
}
