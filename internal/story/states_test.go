package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInterceptDrive: "rest" is kept on the state; any other value is
// refused with the one valid mode named.
func TestInterceptDrive(t *testing.T) {
	want := []string{
		`intercept.yaml:8:22: states.idle.intercept_drive: intercept_drive must be "rest" (the only mode), got "drive"`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/intercept.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
