//go:build unix && !linux

package supervise

import "syscall"

// sysProcAttr puts the child in a process group of its own. This platform
// has no parent-death signal: a kitsoki killed with SIGKILL leaves its
// children running until they notice their pipes closed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
