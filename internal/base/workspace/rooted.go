package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files opened through the workspace root.
//
// A path checked with Resolve and then opened by name can be swapped
// between the two: a directory of it replaced by a symlink to /etc, say.
// The operations below open a path inside the workspace through an
// os.Root of the workspace directory instead, which walks it component by
// component from the directory it opened and refuses a symlink that leads
// out, whatever the path is when it is opened. A refused path is an
// *OutsideError with Escaped set. They work on the operating system's
// files only (a workspace over an fs.FS is read-only; Open and Stat read
// it, the others fail). Each opens the root anew, so a Root stays a plain
// value with nothing to close.

// rel is path relative to the workspace directory, and whether it lies
// inside it.
func (r Root) rel(path string) (string, bool) {
	if r.dir == "" {
		return "", false
	}
	rel, err := filepath.Rel(r.dir, filepath.Clean(path))
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}

// do runs op on the workspace's os.Root with path relative to it. An
// os.Root refuses every absolute symlink, even one leading back inside; so
// when op is refused, path is resolved (its existing part, as Resolve
// does) and, when that lies inside the workspace, op runs once more on the
// resolved path, itself opened through the root: a symlink swapped in
// between is refused again. A refusal is an *OutsideError naming path.
func (r Root) do(path string, op func(root *os.Root, rel string) error) error {
	rel, ok := r.rel(path)
	if !ok {
		return &OutsideError{Name: path, Root: r.dir}
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return fmt.Errorf("open the workspace %s: %w", r.dir, err)
	}
	defer root.Close()
	err = op(root, rel)
	if escaped(err) {
		err = &OutsideError{Name: path, Root: r.dir, Escaped: true}
		if real, rerr := evalExisting(filepath.Clean(path)); rerr == nil && real != filepath.Clean(path) {
			if rrel, inside := r.rel(real); inside {
				if err = op(root, rrel); escaped(err) {
					err = &OutsideError{Name: path, Root: r.dir, Escaped: true}
				}
			}
		}
	}
	var oe *OutsideError
	if err != nil && !errors.As(err, &oe) {
		return renamePathErr(err, path)
	}
	return err
}

// escaped reports os.Root's refusal of a path leading out of the root.
func escaped(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// renamePathErr names path (the OS path the caller gave) in a
// *fs.PathError instead of the root-relative one.
func renamePathErr(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op := pe.Op
		if o, ok := plainOps[op]; ok {
			op = o
		}
		return &fs.PathError{Op: op, Path: path, Err: pe.Err}
	}
	return err
}

// plainOps words the *at system calls an os.Root makes as os's functions
// do.
var plainOps = map[string]string{
	"openat": "open", "statat": "stat", "fstatat": "stat", "mkdirat": "mkdir",
	"unlinkat": "remove", "renameat": "rename", "fchmodat": "chmod", "readlinkat": "readlink",
}

// writable refuses a workspace over an fs.FS.
func (r Root) writable(path string) error {
	if r.m != nil {
		return fmt.Errorf("%s: the workspace is read-only (its files come from an fs.FS)", path)
	}
	return nil
}

// OpenFile is os.OpenFile of the OS path path, inside the workspace,
// through the workspace root.
func (r Root) OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := r.writable(path); err != nil {
		return nil, err
	}
	var f *os.File
	err := r.do(path, func(root *os.Root, rel string) (err error) {
		f, err = root.OpenFile(rel, flag, perm)
		return err
	})
	return f, err
}

// Open is OpenFile for reading.
func (r Root) Open(path string) (*os.File, error) { return r.OpenFile(path, os.O_RDONLY, 0) }

// MkdirAll is os.MkdirAll of path through the workspace root.
func (r Root) MkdirAll(path string, perm fs.FileMode) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error { return root.MkdirAll(rel, perm) })
}

// ReadDir is os.ReadDir of path through the workspace root.
func (r Root) ReadDir(path string) ([]fs.DirEntry, error) {
	if err := r.writable(path); err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	err := r.do(path, func(root *os.Root, rel string) (err error) {
		out, err = fs.ReadDir(root.FS(), filepath.ToSlash(rel))
		return err
	})
	return out, err
}

// WalkDir is filepath.WalkDir of path through the workspace root: fn gets
// OS paths.
func (r Root) WalkDir(path string, fn fs.WalkDirFunc) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error {
		return fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
			return fn(filepath.Join(r.dir, filepath.FromSlash(p)), d, err)
		})
	})
}

// Rename is os.Rename through the workspace root; both paths are inside it.
func (r Root) Rename(oldpath, newpath string) error {
	if err := r.writable(newpath); err != nil {
		return err
	}
	oldRel, ok := r.rel(oldpath)
	if !ok {
		return &OutsideError{Name: oldpath, Root: r.dir}
	}
	return r.do(newpath, func(root *os.Root, newRel string) error { return root.Rename(oldRel, newRel) })
}

// Remove is os.Remove through the workspace root.
func (r Root) Remove(path string) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error { return root.Remove(rel) })
}

// Chmod is os.Chmod through the workspace root.
func (r Root) Chmod(path string, mode fs.FileMode) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error { return root.Chmod(rel, mode) })
}

// StatInside is Stat through the workspace root with no way out: a path a
// symlink leads out of the workspace is an *OutsideError, not the outside
// file's information.
func (r Root) StatInside(path string) (fs.FileInfo, error) {
	if r.m != nil {
		return r.Stat(path)
	}
	var fi fs.FileInfo
	err := r.do(path, func(root *os.Root, rel string) (err error) {
		fi, err = root.Stat(rel)
		return err
	})
	return fi, err
}

// Mkdir is os.Mkdir of path through the workspace root.
func (r Root) Mkdir(path string, perm fs.FileMode) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error { return root.Mkdir(rel, perm) })
}

// RemoveAll is os.RemoveAll of path through the workspace root: nothing a
// symlink swapped into the path leads to outside the workspace is removed.
func (r Root) RemoveAll(path string) error {
	if err := r.writable(path); err != nil {
		return err
	}
	return r.do(path, func(root *os.Root, rel string) error { return root.RemoveAll(rel) })
}
