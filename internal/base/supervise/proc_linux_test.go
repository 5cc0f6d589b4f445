package supervise

import (
	"os"
	"syscall"
	"testing"
)

// statOf reads kitsoki's own stat line as the sweep reads a child's: its
// parent, process group and session, from the fields after the command
// name (which may hold spaces and parentheses).
func TestStatOfReadsTheFieldsAfterTheCommand(t *testing.T) {
	c, ok := statOf(os.Getpid(), make([]byte, statLineMax))
	if !ok {
		t.Fatal("statOf(self) found nothing")
	}
	if c.ppid != os.Getppid() || c.pgrp != syscall.Getpgrp() || c.zombie {
		t.Errorf("statOf(self) = %+v, want ppid %d, pgrp %d, not a zombie", c, os.Getppid(), syscall.Getpgrp())
	}
	f, ok := leadingFields([]byte(" S 12 34 56 0 -1"))
	if !ok || string(f[0]) != "S" || string(f[1]) != "12" || string(f[3]) != "56" {
		t.Errorf("leadingFields = %q, %v", f, ok)
	}
	if _, ok := leadingFields([]byte(" S 12")); ok {
		t.Error("leadingFields accepted a line with two fields")
	}
}
