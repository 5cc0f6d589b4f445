//go:build unix

package supervise

import (
	"errors"
	"syscall"
)

// errNoSIGTERM is never returned on unix, where SIGTERM exists.
var errNoSIGTERM = errors.New("SIGTERM is not supported on this platform")

// signalGroup sends sig to the child's process group; p.mu is held.
func (p *Process) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is already empty
	}
	return err
}
