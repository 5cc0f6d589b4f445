package cluster

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// A story bundle is every file a load of the story reads (its root file,
// includes, imports inside the bundle root, prompt files, system prompts,
// schemas and their $refs, plugin manifests), as a tar archive stored in
// the blob store: the session's StoryRef names it by its digest, and the
// workers run that, not a stories directory of their own. Its bytes
// depend only on the files (entries sorted by name, mode 0644, no times,
// owners or other metadata), so the same story is the same blob, and a
// session keeps running the version it started with however its files
// change afterwards.

// Limits of a bundle a worker unpacks.
const (
	maxBundleFiles = 10_000
	maxBundleBytes = 256 << 20
)

// PackStory packs the story at path (st, as the caller loaded it with
// opts) into a bundle in blobs and returns the StoryRef that names it. The
// bundle's root is storiesDir when the story lies inside it (the path in
// the ref is the one a worker's --stories would have), else the story's
// workspace. A story that reads a file outside the root (a library
// import) cannot be bundled: the error says so.
func PackStory(path string, st *story.Story, blobs *Blobs, storiesDir string, opts ...story.Option) (StoryRef, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return StoryRef{}, err
	}
	var roots []string
	if dir, err := filepath.Abs(storiesDir); err == nil && storiesDir != "" {
		if rel, err := filepath.Rel(dir, abs); err == nil && filepath.IsLocal(rel) {
			roots = append(roots, dir)
		}
	}
	if ws := st.Workspace.Dir(); ws != "" && !slices.Contains(roots, ws) {
		roots = append(roots, ws)
	}
	var errs []error
	for _, root := range roots {
		ref, err := packFrom(root, abs, st, blobs, opts)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
	}
	return StoryRef{}, fmt.Errorf("cannot bundle story %s for the workers: %w", path, errors.Join(errs...))
}

// packFrom loads the story again, reading through a recording view of
// root, and bundles the files that load read.
func packFrom(root, abs string, st *story.Story, blobs *Blobs, opts []story.Option) (StoryRef, error) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return StoryRef{}, fmt.Errorf("%s is not inside %s", abs, root)
	}
	osRoot, err := os.OpenRoot(root)
	if err != nil {
		return StoryRef{}, err
	}
	defer osRoot.Close()
	rec := &recordFS{fsys: osRoot.FS(), files: map[string][]byte{}}
	again, err := story.Load(abs, append(slices.Clone(opts), story.WithFS(rec, root), story.WithWorkspace(root))...)
	if err != nil {
		return StoryRef{}, fmt.Errorf("reading it inside %s: %w", root, err)
	}
	defer again.Close()
	if again.ContentHash != st.ContentHash {
		return StoryRef{}, fmt.Errorf("inside %s it loads as %s, not %s: it reads files outside %s", root, again.ContentHash, st.ContentHash, root)
	}
	b, err := tarFiles(rec.files)
	if err != nil {
		return StoryRef{}, err
	}
	digest, err := blobs.Put(b)
	if err != nil {
		return StoryRef{}, err
	}
	return StoryRef{Path: filepath.ToSlash(rel), Hash: st.ContentHash, Bundle: digest}, nil
}

// recordFS is an fs.FS that remembers every regular file read through it.
type recordFS struct {
	fsys  fs.FS
	mu    sync.Mutex
	files map[string][]byte
}

func (r *recordFS) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return f, err
	}
	return &recordFile{File: f, name: name, r: r}, nil
}

// recordFile keeps what is read of a file; a file read to its end is
// recorded.
type recordFile struct {
	fs.File
	name string
	r    *recordFS
	buf  bytes.Buffer
}

func (f *recordFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.buf.Write(p[:n])
	if errors.Is(err, io.EOF) {
		f.r.mu.Lock()
		f.r.files[f.name] = bytes.Clone(f.buf.Bytes())
		f.r.mu.Unlock()
	}
	return n, err
}

// tarFiles is the bundle of files: a tar of them, sorted, no metadata.
func tarFiles(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n])), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("story bundle: %w", err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, fmt.Errorf("story bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("story bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// unpack makes the bundle digest a directory under dir (once: the
// directory is named by the digest and never changes) and returns it.
func unpack(blobs *Blobs, dir, digest string) (string, error) {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if _, err := hex.DecodeString(hexd); !ok || err != nil || len(hexd) != sha256.Size*2 {
		return "", fmt.Errorf("story bundle %q: want sha256:<64 hex digits>", digest)
	}
	out := filepath.Join(dir, hexd)
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return out, nil
	}
	b, err := blobs.Get(digest)
	if err != nil {
		return "", fmt.Errorf("story bundle: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("story bundle: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".unpack-*")
	if err != nil {
		return "", fmt.Errorf("story bundle: %w", err)
	}
	if err := untar(b, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("story bundle %s: %w", digest, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.RemoveAll(tmp)
		if fi, serr := os.Stat(out); serr == nil && fi.IsDir() {
			return out, nil // another worker unpacked it first
		}
		return "", fmt.Errorf("story bundle: %w", err)
	}
	return out, nil
}

// untar writes the bundle's regular files under dir, refusing any entry
// that is not one, a name that leaves dir, and a bundle over the limits.
func untar(b []byte, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(bytes.NewReader(b))
	total := 0
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case hdr.Typeflag != tar.TypeReg:
			return fmt.Errorf("entry %q is not a regular file", hdr.Name)
		case !fs.ValidPath(hdr.Name):
			return fmt.Errorf("entry %q is not a path inside the bundle", hdr.Name)
		case n >= maxBundleFiles || hdr.Size > workspace.MaxFileSize || total+int(hdr.Size) > maxBundleBytes:
			return fmt.Errorf("more than %d files or %d bytes (a file at most %d)", maxBundleFiles, maxBundleBytes, workspace.MaxFileSize)
		}
		total += int(hdr.Size)
		if d := path.Dir(hdr.Name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		f, err := root.OpenFile(hdr.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, werr := io.Copy(f, tr)
		if err := errors.Join(werr, f.Close()); err != nil {
			return err
		}
	}
}
