//go:build !unix

package claudecli

import "os/exec"

// setProcessGroup leaves the default: cancelling kills the CLI process.
func setProcessGroup(*exec.Cmd) {}

// killGroup has no process group to clean up.
func killGroup(*exec.Cmd) {}
