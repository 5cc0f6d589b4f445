package story

import (
	"io/fs"
	"os"
	"path/filepath"
)

// files is where the loader reads: the operating system's files, or an
// fs.FS mounted at a directory (WithFS). Names are absolute OS paths in
// both cases, so the rest of the loader resolves and reports paths the same
// way whichever it reads.
type files interface {
	ReadFile(name string) ([]byte, error)
	Stat(name string) (fs.FileInfo, error)
	Glob(pattern string) ([]string, error)
}

// osFiles reads the operating system's files.
type osFiles struct{}

func (osFiles) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (osFiles) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osFiles) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

// mountedFiles reads fsys as the contents of the directory dir; every path
// outside dir does not exist.
type mountedFiles struct {
	fsys fs.FS
	dir  string // absolute, cleaned
}

// name returns the fs.FS name of the absolute path abs, false when abs is
// not under the mount point.
func (m mountedFiles) name(abs string) (string, bool) {
	rel, err := filepath.Rel(m.dir, abs)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	return rel, fs.ValidPath(rel)
}

func (m mountedFiles) ReadFile(name string) ([]byte, error) {
	n, ok := m.name(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	b, err := fs.ReadFile(m.fsys, n)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: pathErrCause(err)}
	}
	return b, nil
}

func (m mountedFiles) Stat(name string) (fs.FileInfo, error) {
	n, ok := m.name(name)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	st, err := fs.Stat(m.fsys, n)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: pathErrCause(err)}
	}
	return st, nil
}

// Glob matches pattern (an absolute OS pattern) against the mounted files.
// A pattern outside the mount point matches nothing; a malformed one is
// filepath.ErrBadPattern, as for the OS.
func (m mountedFiles) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	n, ok := m.name(pattern)
	if !ok {
		return nil, nil
	}
	matches, err := fs.Glob(m.fsys, n)
	if err != nil {
		return nil, err
	}
	for i, mt := range matches {
		matches[i] = filepath.Join(m.dir, filepath.FromSlash(mt))
	}
	return matches, nil
}

func pathErrCause(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
