//go:build !unix

package subprocess

import (
	"os"
	"syscall"
)

// sysProcAttr has nothing to set on this platform.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only kill the plugin itself here: there are no process
// groups and no SIGTERM, so the grace period is skipped.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return p.Kill()
}
