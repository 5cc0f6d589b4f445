//go:build unix

package claudecli

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the CLI in its own process group, so a cancelled
// call can signal everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// killGroup kills whatever is left of the CLI's process group after the
// CLI itself was reaped.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
