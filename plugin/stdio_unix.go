//go:build unix

package plugin

import (
	"os"
	"syscall"
)

// stdio returns stdin and stdout for serving. When they are pipes, as they
// are under kitsoki, they are switched to non-blocking mode and reopened so
// reads and writes go through Go's network poller: a goroutine blocked in
// a plain read(2) on stdin holds its scheduler slot, and the goroutine that
// should answer the request just read waits behind it, adding hundreds of
// microseconds per call. Terminals and files are left alone.
func stdio() (in, out *os.File) {
	return pollable(os.Stdin, 0, "/dev/stdin"), pollable(os.Stdout, 1, "/dev/stdout")
}

func pollable(f *os.File, fd int, name string) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return f
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), name)
}
