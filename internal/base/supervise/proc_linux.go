package supervise

import "syscall"

// sysProcAttr puts the child in a process group of its own and asks the
// kernel to SIGKILL it if the thread that started it (kept until the child
// is reaped) goes away, which happens when kitsoki dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
