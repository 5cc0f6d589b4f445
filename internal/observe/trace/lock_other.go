//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package trace

import (
	"fmt"
	"os"
	"runtime"
)

// lockFile refuses: without flock there is no way to keep two writers off
// the same trace, and a trace with two writers breaks the seq rules.
func lockFile(*os.File) error {
	return fmt.Errorf("trace writer needs flock(2), which %s does not provide", runtime.GOOS)
}
