// Package hostfs is where the handlers of the vcs, ci, chat and ide
// families touch files: every path is checked to lie inside the workspace
// (internal/base/workspace resolves it, symlinks included) and every write
// replaces its file through a temporary file in the same directory, so a
// reader never sees half a record. Keeping the file access of those
// handlers in this one place is what lets it move onto an os.Root opened at
// the workspace without touching the handlers.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// FS is the workspace as the handlers see it.
type FS struct{ ws workspace.Root }

// New returns the workspace ws as an FS.
func New(ws workspace.Root) FS { return FS{ws: ws} }

// Dir returns an FS rooted at dir, a directory of kitsoki's own (the
// sessions directory), made when missing: paths are checked to stay in it
// as they are for a workspace.
func Dir(dir string) (FS, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return FS{}, err
	}
	ws, err := workspace.New(dir)
	if err != nil {
		return FS{}, err
	}
	return FS{ws: ws}, nil
}

// Workspace is the workspace the FS checks paths against.
func (f FS) Workspace() workspace.Root { return f.ws }

// ErrNoWorkspace is an FS with no workspace: nothing may be read or written.
var ErrNoWorkspace = errors.New("no workspace is set for this run, so no file can be read or written")

// Resolve returns the real path of name (relative to the workspace
// directory unless absolute), refusing one outside the workspace.
func (f FS) Resolve(name string) (string, error) {
	if f.ws.IsZero() {
		return "", ErrNoWorkspace
	}
	return f.ws.Resolve(f.ws.Dir(), name)
}

// Join resolves elem joined under the workspace directory.
func (f FS) Join(elem ...string) (string, error) {
	if f.ws.IsZero() {
		return "", ErrNoWorkspace
	}
	return f.Resolve(filepath.Join(append([]string{f.ws.Dir()}, elem...)...))
}

// check refuses an absolute path outside the workspace: every operation
// checks again what it is handed, so a path built by a caller cannot leave.
func (f FS) check(path string) (string, error) {
	if f.ws.IsZero() {
		return "", ErrNoWorkspace
	}
	return f.ws.Resolve(f.ws.Dir(), path)
}

// ReadFile reads a file inside the workspace.
func (f FS) ReadFile(path string) ([]byte, error) {
	p, err := f.check(path)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Stat describes a path inside the workspace.
func (f FS) Stat(path string) (fs.FileInfo, error) {
	p, err := f.check(path)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

// ReadDir lists a directory inside the workspace; a missing one is empty.
func (f FS) ReadDir(path string) ([]fs.DirEntry, error) {
	p, err := f.check(path)
	if err != nil {
		return nil, err
	}
	es, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return es, err
}

// MkdirAll makes a directory (and its parents) inside the workspace.
func (f FS) MkdirAll(path string) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	return os.MkdirAll(p, 0o755)
}

// WriteFile replaces the file at path with data, through a temporary file
// renamed over it; its directory is made when missing.
func (f FS) WriteFile(path string, data []byte) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// CreateExclusive writes a new file at path, failing with fs.ErrExist when
// one is there: two runs numbering records in one directory never take the
// same name.
func (f FS) CreateExclusive(path string, data []byte) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := fh.Write(data)
	if err := errors.Join(werr, fh.Close()); err != nil {
		os.Remove(p)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// Remove deletes a file inside the workspace; a missing one is not an
// error.
func (f FS) Remove(path string) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// MkdirTemp makes a new directory under dir (inside the workspace) and
// returns its path; the caller removes it with RemoveAll.
func (f FS) MkdirTemp(dir, pattern string) (string, error) {
	p, err := f.check(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(p, pattern)
}

// RemoveAll removes path and what it holds, inside the workspace.
func (f FS) RemoveAll(path string) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	if p == f.ws.Dir() {
		return fmt.Errorf("refusing to remove the workspace directory %s", p)
	}
	return os.RemoveAll(p)
}
