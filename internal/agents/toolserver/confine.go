package toolserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// Confine resolves p against root (p may be relative to root, or absolute)
// and refuses anything that leaves root, directly or through a symlink, or
// that does not exist. It returns the cleaned absolute path. Every tool
// that reads a file by a path the client chose goes through it.
func Confine(root, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("a path is required")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	path := filepath.FromSlash(p)
	if !filepath.IsAbs(path) {
		path = filepath.Join(absRoot, path)
	}
	path = filepath.Clean(path)
	ws, err := workspace.New(absRoot)
	if err != nil {
		return "", err
	}
	real, err := ws.Resolve(absRoot, path)
	var oe *workspace.OutsideError
	switch {
	case errors.As(err, &oe) && oe.Resolved != "":
		return "", fmt.Errorf("%s leads outside the served directory %s", p, absRoot)
	case errors.As(err, &oe):
		return "", fmt.Errorf("%s is outside the served directory %s", p, absRoot)
	case err != nil:
		return "", err
	}
	if _, err := os.Stat(real); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s: %v", p, pe.Err)
		}
		return "", err
	}
	return path, nil
}
