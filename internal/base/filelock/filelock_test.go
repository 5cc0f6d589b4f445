package filelock

import (
	"errors"
	"path/filepath"
	"testing"
)

// A second Acquire of a held lock fails with ErrLocked; after Release it
// succeeds.
func TestAcquireExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "s.lock")
	a, err := Acquire(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want ErrLocked", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatalf("second Release = %v", err)
	}
	b, err := Acquire(p)
	if err != nil {
		t.Fatalf("Acquire after Release = %v", err)
	}
	b.Release()
}
