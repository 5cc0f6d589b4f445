//go:build !unix

package supervise

import (
	"errors"
	"os/exec"
	"syscall"
)

// errNoSIGTERM says the platform cannot ask a child to stop: Stop kills it
// at once instead of waiting a grace period.
var errNoSIGTERM = errors.New("SIGTERM is not supported on this platform")

// sysProcAttr has nothing to set on this platform.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only kill the child itself here: there are no process
// groups and no SIGTERM. p.mu is held.
func (p *Process) signalGroup(sig syscall.Signal) error {
	if err := p.proc.Kill(); err != nil {
		return err
	}
	if sig != syscall.SIGKILL {
		return errNoSIGTERM
	}
	return nil
}

// prepare has nothing to set up on this platform.
func prepare(*exec.Cmd) string { return "" }

// sweep has nothing to reap on this platform.
func (*Process) sweep() {}
