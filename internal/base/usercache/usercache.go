// Package usercache names kitsoki's directory in the user's cache: where
// downloaded model servers and weights are kept, and the one place outside
// a workspace a story may point a cache at (routing.embedding.cache_dir).
package usercache

import (
	"fmt"
	"os"
	"path/filepath"
)

// Env overrides the directory.
const Env = "KITSOKI_CACHE_DIR"

// Dir is $KITSOKI_CACHE_DIR, else kitsoki/ under the user cache directory
// (~/.cache on Linux, ~/Library/Caches on macOS).
func Dir() (string, error) {
	if d := os.Getenv(Env); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set %s): %w", Env, err)
	}
	return filepath.Join(d, "kitsoki"), nil
}
