package main

import (
	"strings"
	"testing"
)

// :back returns to the previous room; with no history it says so and the
// loop goes on.
func TestInteractiveBack(t *testing.T) {
	code, out, errs := runInteractive(t, ":back\ngreet name=Ada\n:back\n:back\n:quit\n")
	if code != exitIncomplete {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "kitsoki: there is no room to go back to: the history is empty") {
		t.Errorf("stderr lacks the empty-history message:\n%s", errs)
	}
	// greet: lobby -> greeting -> greeted; back to greeting, then lobby.
	if i := strings.LastIndex(out, "[lobby]"); i < 0 || strings.Count(out, "[lobby]") < 2 {
		t.Errorf("the second :back did not return to the lobby:\n%s", out)
	}
}
