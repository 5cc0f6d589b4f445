//go:build unix && !linux

package subprocess

import (
	"os"
	"syscall"
)

// sysProcAttr puts the plugin in a process group of its own, so signals
// reach everything it started and a terminal's Ctrl-C reaches kitsoki only.
// This platform has no parent-death signal: a kitsoki killed with SIGKILL
// leaves its plugins running until their stdin closes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the plugin's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
