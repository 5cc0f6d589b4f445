package toolserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// Confine resolves p against root (p may be relative to root, or absolute)
// and refuses anything that leaves root, directly or through a symlink, or
// that does not exist. It returns the cleaned absolute path. A tool that
// reads what the path names opens it with OpenConfined or walks it with
// WalkConfined, not by this name: a directory of it swapped for a symlink
// after the check would lead the open out.
func Confine(root, p string) (string, error) {
	_, path, _, err := confine(root, p)
	return path, err
}

// OpenConfined opens the file p names inside root, as Confine checks it,
// through an os.Root of root: a symlink swapped in after the check that
// leads out is refused when it is met.
func OpenConfined(root, p string) (*os.File, error) {
	ws, _, real, err := confine(root, p)
	if err != nil {
		return nil, err
	}
	f, err := ws.Open(real)
	if err != nil {
		return nil, confineErr(p, root, err)
	}
	return f, nil
}

// WalkConfined walks the directory p names inside root, as Confine checks
// it, through an os.Root of root; fn gets each path relative to root.
func WalkConfined(root, p string, fn func(rel string, d fs.DirEntry, err error) error) error {
	ws, _, real, err := confine(root, p)
	if err != nil {
		return err
	}
	return ws.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(ws.Dir(), path)
		if rerr != nil {
			return rerr
		}
		return fn(rel, d, err)
	})
}

func confineErr(p, root string, err error) error {
	var oe *workspace.OutsideError
	if errors.As(err, &oe) {
		return fmt.Errorf("%s leads outside the served directory %s", p, root)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", p, pe.Err)
	}
	return err
}

func confine(root, p string) (workspace.Root, string, string, error) {
	var none workspace.Root
	if strings.TrimSpace(p) == "" {
		return none, "", "", errors.New("a path is required")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return none, "", "", err
	}
	path := filepath.FromSlash(p)
	if !filepath.IsAbs(path) {
		path = filepath.Join(absRoot, path)
	}
	path = filepath.Clean(path)
	ws, err := workspace.New(absRoot)
	if err != nil {
		return none, "", "", err
	}
	real, err := ws.Resolve(absRoot, path)
	var oe *workspace.OutsideError
	switch {
	case errors.As(err, &oe) && oe.Resolved != "":
		return none, "", "", fmt.Errorf("%s leads outside the served directory %s", p, absRoot)
	case errors.As(err, &oe):
		return none, "", "", fmt.Errorf("%s is outside the served directory %s", p, absRoot)
	case err != nil:
		return none, "", "", err
	}
	if _, err := os.Stat(real); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return none, "", "", fmt.Errorf("%s: %v", p, pe.Err)
		}
		return none, "", "", err
	}
	return ws, path, real, nil
}
