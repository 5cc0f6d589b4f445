package subprocess

import (
	"os"
	"syscall"
)

// sysProcAttr puts the plugin in a process group of its own, so signals
// reach everything it started and a terminal's Ctrl-C reaches kitsoki only
// (kitsoki then closes its agents), and asks the kernel to SIGKILL it if
// kitsoki dies without closing them.
//
// Pdeathsig fires when the OS thread that started the child exits, which is
// why an agent starts its plugins from a thread of its own, kept until
// Close (see Agent.onSpawnThread).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the plugin's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
