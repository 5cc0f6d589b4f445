//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package filelock

import (
	"fmt"
	"os"
	"runtime"
)

// lock refuses: without flock there is no way to keep two writers off
// the same file.
func lock(*os.File, bool) error {
	return fmt.Errorf("file locks need flock(2), which %s does not provide", runtime.GOOS)
}
