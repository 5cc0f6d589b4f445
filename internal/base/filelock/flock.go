//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package filelock

import (
	"errors"
	"os"
	"syscall"
)

func lock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	err = rc.Control(func(fd uintptr) {
		for {
			lockErr = syscall.Flock(int(fd), how)
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
