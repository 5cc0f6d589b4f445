// Package workspace defines the one directory every file a story names must
// stay inside, and reads those files within a size limit.
//
// The workspace of a story is, unless one is given explicitly (--workspace
// DIR, or the MCP server's served directory), the git work tree enclosing
// the story's root file — the nearest directory above it holding a .git
// entry (a directory, or the file a linked worktree or submodule has) —
// else the story's own directory. A work tree at the user's home directory
// or at the filesystem root is not taken: it would hold ~/.ssh and the
// whole system, so the story's directory is used instead.
//
// A path is inside the workspace when, with every symlink in it resolved,
// it lies in the workspace directory (itself with symlinks resolved).
package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxFileSize is the largest story file (root file, include, prompt file,
// system prompt, schema, flow fixture, cassette, eval dataset) kitsoki
// reads: 16 MiB.
const MaxFileSize = 16 << 20

// Root is a workspace directory. The zero Root has no directory; use New,
// Find or For.
type Root struct {
	dir string // absolute, symlinks resolved
}

// New returns the workspace rooted at dir, an existing directory (an
// explicit --workspace).
func New(dir string) (Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", dir, unwrapPathErr(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", dir, unwrapPathErr(err))
	}
	if !fi.IsDir() {
		return Root{}, fmt.Errorf("workspace %s: not a directory", dir)
	}
	return Root{dir: real}, nil
}

// Find returns the default workspace of the story whose root file is
// storyFile: the enclosing git work tree, else the file's directory (see
// the package documentation).
func Find(storyFile string) (Root, error) {
	abs, err := filepath.Abs(storyFile)
	if err != nil {
		return Root{}, fmt.Errorf("workspace of %s: %w", storyFile, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return Root{}, fmt.Errorf("workspace of %s: %w", storyFile, unwrapPathErr(err))
	}
	home := ""
	if h, err := os.UserHomeDir(); err == nil {
		if rh, err := filepath.EvalSymlinks(h); err == nil {
			home = rh
		}
	}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if d == home || d == filepath.Dir(d) {
				break
			}
			return Root{dir: d}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return Root{dir: dir}, nil
}

// For returns the workspace of the story at storyFile: explicit when it is
// not empty, else Find(storyFile).
func For(storyFile, explicit string) (Root, error) {
	if explicit != "" {
		return New(explicit)
	}
	return Find(storyFile)
}

// Dir is the workspace directory (absolute, symlinks resolved).
func (r Root) Dir() string { return r.dir }

// IsZero reports whether r is the zero Root.
func (r Root) IsZero() bool { return r.dir == "" }

// Contains reports whether the resolved absolute path real lies inside the
// workspace (the workspace directory itself included).
func (r Root) Contains(real string) bool {
	if r.dir == "" {
		return false
	}
	rel, err := filepath.Rel(r.dir, real)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// OutsideError is a path that leaves the workspace.
type OutsideError struct {
	Name     string // the path as written
	Resolved string // where it leads: set when a symlink takes it out
	Root     string // the workspace directory
}

func (e *OutsideError) Error() string {
	if e.Resolved != "" {
		return fmt.Sprintf("%q leads through a symlink to %s, outside the workspace %s (widen the workspace with --workspace DIR)",
			e.Name, e.Resolved, e.Root)
	}
	return fmt.Sprintf("%q is outside the workspace %s (widen the workspace with --workspace DIR)", e.Name, e.Root)
}

// Resolve returns the real path of name, as written in a story file:
// relative to base (an absolute directory) unless it is absolute, with
// every symlink resolved. A path leading outside the workspace, lexically
// or through a symlink, is an *OutsideError. A path that does not exist is
// not an error here: the resolved form of its existing part, followed by
// the rest, is returned and checked, and reading it fails later.
func (r Root) Resolve(base, name string) (string, error) {
	p := filepath.FromSlash(name)
	written := p // where the path points before its own symlinks are followed
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
		if realBase, err := evalExisting(filepath.Clean(base)); err == nil {
			written = filepath.Join(realBase, written)
		}
	}
	p = filepath.Clean(p)
	real, err := evalExisting(p)
	if err != nil {
		return "", fmt.Errorf("%q: %w", name, err)
	}
	if !r.Contains(real) {
		oe := &OutsideError{Name: name, Root: r.dir}
		if r.Contains(filepath.Clean(written)) {
			oe.Resolved = real
		}
		return "", oe
	}
	return real, nil
}

// evalExisting resolves the symlinks of the longest existing prefix of the
// clean absolute path p and appends the rest unchanged.
func evalExisting(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			if rest == "" {
				return real, nil
			}
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return "", unwrapPathErr(err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// isNotDir reports ENOTDIR: a path through a regular file, which cannot
// exist either.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// ErrNotRegular is reading something that is not a regular file (a
// directory, a device, a pipe).
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is a story file over MaxFileSize.
type TooLargeError struct {
	Name string // the file, as the caller names it
	Size int64  // its size, or MaxFileSize+1 when it grew while being read
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes; a story file may be at most %d MiB (%d bytes)", e.Name, e.Size, MaxFileSize>>20, MaxFileSize)
}

// ReadFile reads the regular file at path (already resolved), refusing one
// over MaxFileSize before reading it: the size is checked on the open file,
// and at most MaxFileSize+1 bytes are ever read. name is how errors name
// the file.
func ReadFile(path, name string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name)
}

// ReadFS is ReadFile for a file inside an fs.FS (such as an os.Root's).
func ReadFS(fsys fs.FS, path, name string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name)
}

func readOpen(f fs.File, name string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	if fi.Size() > MaxFileSize {
		return nil, &TooLargeError{Name: name, Size: fi.Size()}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, &TooLargeError{Name: name, Size: MaxFileSize + 1}
	}
	return b, nil
}

// ReadIn resolves name (see Resolve) and reads it (see ReadFile). It
// returns the content and the resolved path.
func (r Root) ReadIn(base, name string) ([]byte, string, error) {
	real, err := r.Resolve(base, name)
	if err != nil {
		return nil, "", err
	}
	b, err := ReadFile(real, name)
	if err != nil {
		return nil, real, err
	}
	return b, real, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
