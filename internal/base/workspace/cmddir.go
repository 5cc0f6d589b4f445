package workspace

import (
	"fmt"
	"os"
	"strconv"
)

// CommandDir opens dir, a directory inside the workspace, through the
// workspace root and returns a path a child process can be started in
// that names the directory opened, not its path: /proc/self/fd/N, which
// the child resolves through the descriptor it inherits until it execs. A
// directory of the path that a symlink replaced after the path was checked
// cannot lead the command out of the workspace: the open is refused (an
// *OutsideError with Escaped set), or it finds the directory that was
// checked. release closes the descriptor; call it once the command has
// started (or ended). Where there is no /proc, in a workspace over an
// fs.FS, or with no workspace, dir is returned as it is. Every handler
// that starts a command in a story-given directory goes through here.
func (r Root) CommandDir(dir string) (path string, release func(), err error) {
	if r.dir == "" || r.m != nil || !procFD() {
		return dir, func() {}, nil
	}
	f, err := r.Open(dir)
	if err != nil {
		return "", nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return "", nil, fmt.Errorf("%s is not a directory", dir)
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), func() { f.Close() }, nil
}

// procFD reports whether /proc/self/fd names this process's descriptors.
func procFD() bool {
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
}
