//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package trace

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking advisory lock on f. The lock
// lives as long as the descriptor: closing f releases it, and so does the
// kernel when the process dies.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	err = rc.Control(func(fd uintptr) {
		for {
			lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lockErr, syscall.EINTR) {
				return
			}
		}
	})
	switch {
	case err != nil:
		return err
	case errors.Is(lockErr, syscall.EWOULDBLOCK):
		return ErrLocked
	default:
		return lockErr
	}
}
