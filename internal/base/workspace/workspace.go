// Package workspace defines the one directory every file a story names must
// stay inside, and reads those files within a size limit.
//
// The workspace of a story is, unless one is given explicitly (--workspace
// DIR, or the MCP server's served directory), the git work tree enclosing
// the story's root file — the nearest directory above it holding a .git
// entry (a directory, or the file a linked worktree or submodule has) or
// a .kitsoki-root marker file (a stories tree whose stories import each
// other) — else the story's own directory. A work tree at the user's home directory
// or at the filesystem root is not taken: it would hold ~/.ssh and the
// whole system, so the story's directory is used instead.
//
// A path is inside the workspace when, with every symlink in it resolved,
// it lies in the workspace directory (itself with symlinks resolved).
//
// A workspace may also lie in an fs.FS mounted at a directory (NewFS, for
// stories loaded from memory): its files are read from the fs.FS, every
// path outside the mount directory does not exist, and paths are checked
// lexically, as written and cleaned. No symlink is resolved there: an fs.FS
// has none to resolve, or follows them itself (os.DirFS does, so use an
// os.Root's FS for a directory whose symlinks must not lead out of it).
// The size limit applies the same way to both.
package workspace

import (
	"bytes"
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

// Root is a workspace directory, and the files it is read from: the
// operating system's, or an fs.FS's (NewFS). The zero Root has no
// directory (it contains nothing) and reads the operating system's files;
// use New, Find, For or NewFS.
type Root struct {
	dir string // absolute; symlinks resolved unless m is set
	m   *mount // nil: the operating system's files
	// also are trusted read-only directories outside dir whose files a
	// story may read too: the story library shipped with kitsoki (With).
	also []string
}

// With returns r that also contains the directories dirs (each absolute,
// symlinks resolved): the story library shipped with kitsoki, whose
// stories @kitsoki/NAME imports read. Directories that do not exist are
// left out.
func (r Root) With(dirs ...string) Root {
	out := r
	out.also = append([]string(nil), r.also...)
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if abs, err := filepath.Abs(real); err == nil {
				out.also = append(out.also, abs)
			}
		}
	}
	return out
}

// mount is an fs.FS holding the contents of an OS directory.
type mount struct {
	fsys fs.FS
	dir  string // absolute, clean
}

// name returns the fs.FS name of the absolute, clean path abs, false when
// abs is not under the mount directory.
func (m *mount) name(abs string) (string, bool) {
	rel, err := filepath.Rel(m.dir, abs)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	return rel, fs.ValidPath(rel)
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

// RootMarker is the file marking the root of a stories tree: the default
// workspace of a story under it, and where @kitsoki/NAME imports look for
// stories/NAME.
const RootMarker = ".kitsoki-root"

// Find returns the default workspace of the story whose root file is
// storyFile: the enclosing git work tree or stories tree (a directory
// holding a .kitsoki-root marker file, the root Kitsoki's @kitsoki/NAME
// imports are resolved under), whichever is nearer, else the file's
// directory (see the package documentation).
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
		if _, err := os.Lstat(filepath.Join(d, RootMarker)); err == nil && d != home && d != filepath.Dir(d) {
			return Root{dir: d}, nil
		}
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

// NewFS returns a workspace whose files are read from fsys, which holds the
// contents of the directory mountDir (an OS path; nothing on the operating
// system is read): the workspace is dir, a directory of fsys named by its
// OS path under mountDir, or mountDir itself when dir is "". Paths are
// checked lexically (see the package documentation).
func NewFS(fsys fs.FS, mountDir, dir string) (Root, error) {
	abs, err := filepath.Abs(mountDir)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", mountDir, err)
	}
	m := &mount{fsys: fsys, dir: abs}
	if dir == "" {
		return Root{dir: abs, m: m}, nil
	}
	return Root{m: m}.At(dir)
}

// At returns the workspace rooted at dir, an existing directory, whose files
// are read where r's are: New(dir) for the operating system's, else the
// directory of r's fs.FS at the OS path dir (absolute, or relative to the
// working directory, as for New).
func (r Root) At(dir string) (Root, error) {
	if r.m == nil {
		return New(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fi, err := r.Stat(abs)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %w", dir, unwrapPathErr(err))
	}
	if !fi.IsDir() {
		return Root{}, fmt.Errorf("workspace %s: not a directory", dir)
	}
	return Root{dir: abs, m: r.m}, nil
}

// Dir is the workspace directory (absolute; symlinks resolved unless the
// workspace lies in an fs.FS).
func (r Root) Dir() string { return r.dir }

// FS returns the fs.FS r's files are read from and the OS directory it
// holds; nil and "" for the operating system's files.
func (r Root) FS() (fs.FS, string) {
	if r.m == nil {
		return nil, ""
	}
	return r.m.fsys, r.m.dir
}

// IsZero reports whether r is the zero Root.
func (r Root) IsZero() bool { return r.dir == "" }

// Contains reports whether the resolved absolute path real lies inside the
// workspace (the workspace directory itself included).
func (r Root) Contains(real string) bool {
	for _, d := range r.also {
		if rel, err := filepath.Rel(d, real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return true
		}
	}
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
	// Escaped: opening it through the workspace root met a symlink
	// leading out (one that changed after the path was checked, or a
	// path never checked).
	Escaped bool
}

func (e *OutsideError) Error() string {
	if e.Escaped {
		return fmt.Sprintf("%q leads through a symlink out of the workspace %s: refused when it was opened (widen the workspace with --workspace DIR)",
			e.Name, e.Root)
	}
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
// the rest, is returned and checked, and reading it fails later. In a
// workspace over an fs.FS the path is only cleaned, and checked as it is.
func (r Root) Resolve(base, name string) (string, error) {
	p := filepath.FromSlash(name)
	if r.m != nil {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		p = filepath.Clean(p)
		if !r.Contains(p) {
			return "", &OutsideError{Name: name, Root: r.dir}
		}
		return p, nil
	}
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

// ReadFS is ReadFile for a file inside an fs.FS (such as an os.Root's):
// path is the fs.FS name.
func ReadFS(fsys fs.FS, path, name string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name)
}

// Read is ReadFile on r's files: the OS path path (already resolved) is
// read from the operating system, or from r's fs.FS, where a path outside
// its mount directory does not exist. A path inside the workspace is opened
// through its root (OpenFile), so a symlink swapped in after the path was
// checked cannot lead the read out of it; a path outside it is read as it
// is (Read does not check it). Errors other than the size limit and an
// *OutsideError are *fs.PathError naming path.
func (r Root) Read(path, name string) ([]byte, error) {
	if r.m == nil {
		if _, inside := r.rel(path); !inside {
			return ReadFile(path, name)
		}
		f, err := r.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readOpen(f, name)
	}
	n, ok := r.m.name(filepath.Clean(path))
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	b, err := ReadFS(r.m.fsys, n, name)
	if err != nil {
		var tl *TooLargeError
		if errors.As(err, &tl) {
			return nil, err
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: unwrapPathErr(err)}
	}
	return b, nil
}

// Stat is os.Stat on r's files (see Read). A stat reads no content, so
// it is made by path (StatInside refuses a path a symlink leads out of the
// workspace); opening the file is what goes through the root.
func (r Root) Stat(path string) (fs.FileInfo, error) {
	if r.m == nil {
		return os.Stat(path)
	}
	n, ok := r.m.name(filepath.Clean(path))
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
	}
	fi, err := fs.Stat(r.m.fsys, n)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: unwrapPathErr(err)}
	}
	return fi, nil
}

// Glob is filepath.Glob on r's files: pattern is an absolute OS pattern,
// and the matches are OS paths. A pattern inside the workspace is matched
// through its root, so no directory a symlink swaps in from outside is
// listed. In an fs.FS a pattern outside the mount directory matches
// nothing; a malformed one is filepath.ErrBadPattern either way.
func (r Root) Glob(pattern string) ([]string, error) {
	if r.m == nil {
		rel, inside := r.rel(pattern)
		if !inside || rel == "." {
			return filepath.Glob(pattern)
		}
		if _, err := filepath.Match(pattern, ""); err != nil {
			return nil, err
		}
		var matches []string
		root, err := os.OpenRoot(r.dir)
		if err != nil {
			return nil, fmt.Errorf("open the workspace %s: %w", r.dir, err)
		}
		defer root.Close()
		matches, err = fs.Glob(root.FS(), filepath.ToSlash(rel))
		for i, mt := range matches {
			matches[i] = filepath.Join(r.dir, filepath.FromSlash(mt))
		}
		return matches, err
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	n, ok := r.m.name(filepath.Clean(pattern))
	if !ok {
		return nil, nil
	}
	matches, err := fs.Glob(r.m.fsys, n)
	if err != nil {
		return nil, err
	}
	for i, mt := range matches {
		matches[i] = filepath.Join(r.m.dir, filepath.FromSlash(mt))
	}
	return matches, nil
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
	// The buffer is sized from the stat, so the content is read into one
	// allocation (io.ReadAll would grow it by doubling); the spare
	// bytes.MinRead lets a read see the end without growing it.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if len(b) > MaxFileSize {
		return nil, &TooLargeError{Name: name, Size: MaxFileSize + 1}
	}
	return b, nil
}

// ReadIn resolves name (see Resolve) and reads it (see Read). It
// returns the content and the resolved path.
func (r Root) ReadIn(base, name string) ([]byte, string, error) {
	real, err := r.Resolve(base, name)
	if err != nil {
		return nil, "", err
	}
	b, err := r.Read(real, name)
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
