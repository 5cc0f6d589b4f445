//go:build unix && !linux

package supervise

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the child in a process group of its own. This platform
// has no parent-death signal: a kitsoki killed with SIGKILL leaves its
// children running until they notice their pipes closed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// prepare has nothing to set up on this platform: there is no child
// subreaper, so descendants that leave the process group are not tracked.
func prepare(*exec.Cmd) string { return "" }

// sweep has nothing to reap on this platform.
func (*Process) sweep() {}
