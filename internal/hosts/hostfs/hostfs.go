// Package hostfs is where the handlers of the vcs, ci, chat and ide
// families touch files: every path is checked to lie inside the workspace
// (internal/base/workspace resolves it, symlinks included) and then opened
// through the workspace root (an os.Root), so a directory of it swapped for
// a symlink leading out after the check is refused when it is met; every
// write replaces its file through a temporary file in the same directory,
// so a reader never sees half a record.
package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

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
	if !f.rooted(p) {
		return os.ReadFile(p)
	}
	fh, err := f.ws.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(fh)
}

// rooted reports whether p (checked) is opened through the workspace root
// (an os.Root), so that a directory of it swapped for a symlink leading
// out between the check and the open is refused when it is met: every
// path under the workspace directory when the workspace is the operating
// system's files. A path of a read-only directory the workspace also
// holds (Root.With) is opened as checked.
func (f FS) rooted(p string) bool {
	if fsys, _ := f.ws.FS(); fsys != nil {
		return false
	}
	rel, err := filepath.Rel(f.ws.Dir(), p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// Stat describes a path inside the workspace.
func (f FS) Stat(path string) (fs.FileInfo, error) {
	p, err := f.check(path)
	if err != nil {
		return nil, err
	}
	if !f.rooted(p) {
		return os.Stat(p)
	}
	return f.ws.StatInside(p)
}

// ReadDir lists a directory inside the workspace; a missing one is empty.
func (f FS) ReadDir(path string) ([]fs.DirEntry, error) {
	p, err := f.check(path)
	if err != nil {
		return nil, err
	}
	var es []fs.DirEntry
	if f.rooted(p) {
		es, err = f.ws.ReadDir(p)
	} else {
		es, err = os.ReadDir(p)
	}
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
	return f.mkdirAll(p)
}

func (f FS) mkdirAll(p string) error {
	if !f.rooted(p) {
		return os.MkdirAll(p, 0o755)
	}
	return f.ws.MkdirAll(p, 0o755)
}

// create opens a new file at p (O_EXCL).
func (f FS) create(p string) (*os.File, error) {
	if !f.rooted(p) {
		return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	return f.ws.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (f FS) remove(p string) error {
	if !f.rooted(p) {
		return os.Remove(p)
	}
	return f.ws.Remove(p)
}

// WriteFile replaces the file at path with data, through a temporary file
// renamed over it; its directory is made when missing.
func (f FS) WriteFile(path string, data []byte) error {
	p, err := f.check(path)
	if err != nil {
		return err
	}
	if err := f.mkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	var tmp *os.File
	var name string
	for range 100 {
		name = filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if tmp, err = f.create(name); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		f.remove(name)
		return err
	}
	if f.rooted(p) {
		err = f.ws.Rename(name, p)
	} else {
		err = os.Rename(name, p)
	}
	if err != nil {
		f.remove(name)
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
	if err := f.mkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	fh, err := f.create(p)
	if err != nil {
		return err
	}
	_, werr := fh.Write(data)
	if err := errors.Join(werr, fh.Close()); err != nil {
		f.remove(p)
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
	if err := f.remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if err := f.mkdirAll(p); err != nil {
		return "", err
	}
	if !f.rooted(p) {
		return os.MkdirTemp(p, pattern)
	}
	for range 100 {
		name := filepath.Join(p, pattern+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if err = f.ws.Mkdir(name, 0o700); !errors.Is(err, fs.ErrExist) {
			return name, err
		}
	}
	return "", err
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
	if !f.rooted(p) {
		return os.RemoveAll(p)
	}
	return f.ws.RemoveAll(p)
}
