package trace

import (
	"errors"
	"os"

	"github.com/kitsoki/kitsoki/internal/base/filelock"
)

// lockFile takes an exclusive, non-blocking advisory lock on f. The lock
// lives as long as the descriptor: closing f releases it, and so does the
// kernel when the process dies.
func lockFile(f *os.File) error {
	err := filelock.TryLock(f)
	if errors.Is(err, filelock.ErrLocked) {
		return ErrLocked
	}
	return err
}
