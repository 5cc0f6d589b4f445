//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package trace

import (
	"errors"
	"os"
	"syscall"
)

// WriterActive reports whether a trace writer holds path open: the
// writer keeps an exclusive flock(2) on its file for as long as it is
// open (Create), so a shared non-blocking lock that fails means a
// run is still writing. The probe holds its lock for the length of two
// system calls; a missing file is not being written.
func WriterActive(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return false
}
