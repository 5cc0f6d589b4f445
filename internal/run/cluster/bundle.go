package cluster

import (
	"archive/tar"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// A story bundle is every file a load of the story reads or checks (its
// root file, includes, imports, prompt files, system prompts, views,
// schemas and their $refs, plugin manifests, Starlark scripts and their
// sidecars, the .kitsoki-root marker imports are found by), as a tar
// archive stored in the blob store: the session's StoryRef names it by its
// digest, and the workers run that, not a stories directory of their own.
// Its bytes depend only on the files (entries sorted by name, mode 0644,
// no times, owners or other metadata), so the same story is the same
// blob, and a session keeps running the version it started with however
// its files change afterwards.
//
// The first entry is BundleManifest, which says how the files are loaded.

// BundleManifest is the name of the bundle entry that describes it (a
// story may not read a file of that name at the bundle's root).
const BundleManifest = ".kitsoki-bundle.json"

// bundleVersion is the manifest's format; a worker refuses another.
const bundleVersion = 1

// manifest is BundleManifest's content.
type manifest struct {
	Version int `json:"version"`
	// StoriesPath are the directories of the client's @kitsoki/NAME
	// search path that lie inside the bundle (slash paths relative to its
	// root), in order: the worker looks imports up there.
	StoriesPath []string `json:"stories_path,omitempty"`
}

// Limits of a bundle, checked when it is packed and when it is unpacked.
const (
	MaxBundleFiles = 10_000
	MaxBundleBytes = 256 << 20
)

// ErrNotBundled is a story that cannot travel as a bundle: it reads files
// outside the directory the bundle is rooted in.
var ErrNotBundled = errors.New("the story cannot travel with the session")

// PackStory packs the story at path (st, as the caller loaded it with
// opts) into a bundle in blobs and returns the StoryRef that names it.
// The bundle is rooted in the story's workspace (the path in the ref is
// relative to it), else, when the story lies inside it, in storiesDir. A
// story that reads a file outside both (an import from the story library
// shipped with kitsoki) cannot be bundled: the error says so.
func PackStory(path string, st *story.Story, blobs *Blobs, storiesDir string, opts ...story.Option) (StoryRef, error) {
	abs, err := filepath.Abs(path)
	if err == nil {
		abs, err = filepath.EvalSymlinks(story.RootFile(abs))
	}
	if err != nil {
		return StoryRef{}, fmt.Errorf("cannot bundle story %s: %w", path, err)
	}
	var roots []string
	if ws := st.Workspace.Dir(); ws != "" {
		roots = append(roots, ws)
	}
	if storiesDir != "" {
		if dir, err := filepath.Abs(storiesDir); err == nil {
			if real, err := filepath.EvalSymlinks(dir); err == nil && !slices.Contains(roots, real) && inside(real, abs) {
				roots = append(roots, real)
			}
		}
	}
	var errs []error
	for _, root := range roots {
		ref, err := packFrom(root, abs, st, blobs, opts)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("it has no workspace"))
	}
	return StoryRef{}, fmt.Errorf("cannot bundle story %s for the workers: %w: %w; copy what it reads into its workspace, "+
		"or read it from the workers' stories directory instead (kitsoki run --stories DIR, kitsoki worker --stories DIR)", path, ErrNotBundled, errors.Join(errs...))
}

func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}

// packFrom loads the story again, reading through a recording view of
// root, and bundles the files that load read or checked.
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
	again, err := story.Load(abs, append(slices.Clone(opts), story.WithFS(rec, root), story.WithWorkspace(root), story.WithoutSecrets())...)
	if rec.err != nil {
		return StoryRef{}, fmt.Errorf("inside %s: %w", root, rec.err)
	}
	if err != nil {
		return StoryRef{}, fmt.Errorf("reading it inside %s: %w", root, err)
	}
	defer again.Close()
	if again.ContentHash != st.ContentHash {
		return StoryRef{}, fmt.Errorf("inside %s it loads as %s, not %s: it reads files outside %s", root, again.ContentHash, st.ContentHash, root)
	}
	if _, ok := rec.files[BundleManifest]; ok {
		return StoryRef{}, fmt.Errorf("it reads %s, the name a bundle's manifest has", filepath.Join(root, BundleManifest))
	}
	man := manifest{Version: bundleVersion}
	for _, d := range story.SearchPath(opts...) {
		if r, err := filepath.Rel(root, d); err == nil && (r == "." || filepath.IsLocal(r)) {
			man.StoriesPath = append(man.StoriesPath, filepath.ToSlash(r))
		}
	}
	b, err := tarBundle(man, rec.files)
	if err != nil {
		return StoryRef{}, err
	}
	digest, err := blobs.Put(b)
	if err != nil {
		return StoryRef{}, err
	}
	return StoryRef{Path: filepath.ToSlash(rel), Hash: st.ContentHash, Bundle: digest}, nil
}

// recordFS is an fs.FS that remembers every regular file opened or
// stat'ed through it, with its content: what the loader read, and the
// files it only checked exist (a Starlark script, the .kitsoki-root
// marker), which the story needs at run time or to resolve the same way.
// A file is read once, whole; the loader reads the recorded bytes, so the
// bundle holds exactly what the check load saw.
type recordFS struct {
	fsys fs.FS

	mu    sync.Mutex
	files map[string][]byte
	total int
	err   error // the first limit exceeded
}

func (r *recordFS) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > workspace.MaxFileSize {
		return f, err // a directory, or a file the loader refuses as too large itself
	}
	defer f.Close()
	data, err := r.record(name, f)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), fi: fi}, nil
}

func (r *recordFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := fs.Stat(r.fsys, name)
	if err != nil || !fi.Mode().IsRegular() {
		return fi, err
	}
	if fi.Size() > workspace.MaxFileSize {
		r.fail(fmt.Errorf("%s is %d bytes; a bundled file is at most %d (16 MiB)", name, fi.Size(), workspace.MaxFileSize))
		return fi, nil
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	return fi, f.Close()
}

// record reads the regular file f (name) and keeps its content.
func (r *recordFS) record(name string, f fs.File) ([]byte, error) {
	r.mu.Lock()
	data, ok := r.files[name]
	r.mu.Unlock()
	if ok {
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, workspace.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[name]; !ok {
		r.files[name] = data
		r.total += len(data)
		if len(r.files) > MaxBundleFiles || r.total > MaxBundleBytes {
			r.err = cmp.Or(r.err, fmt.Errorf("the story reads more than %d files or %d bytes (256 MiB), the most a bundle holds", MaxBundleFiles, MaxBundleBytes))
		}
	}
	return data, nil
}

func (r *recordFS) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = cmp.Or(r.err, err)
}

// memFile is a recorded file as the loader reads it.
type memFile struct {
	*bytes.Reader
	fi fs.FileInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.fi, nil }
func (f *memFile) Close() error               { return nil }

// tarBundle is the bundle of files: its manifest, then the files in name
// order, every entry mode 0644 with no time, owner or other metadata.
func tarBundle(man manifest, files map[string][]byte) ([]byte, error) {
	mb, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(BundleManifest, append(mb, '\n')); err != nil {
		return nil, fmt.Errorf("story bundle: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := add(n, files[n]); err != nil {
			return nil, fmt.Errorf("story bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("story bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// BundleError is a story bundle a worker cannot run: missing from the
// blob store, corrupt, or not a bundle.
type BundleError struct {
	Digest string
	Err    error
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("the session's story bundle %s: %v", e.Digest, e.Err)
}

func (e *BundleError) Unwrap() error { return e.Err }

// unpack makes the bundle digest a directory under dir (once: the
// directory is named by the digest, written whole under a temporary name
// and renamed, and never changes) and returns it with its manifest.
func unpack(blobs *Blobs, dir, digest string) (string, manifest, error) {
	p, err := blobs.path(digest)
	if err != nil {
		return "", manifest{}, &BundleError{Digest: digest, Err: err}
	}
	out := filepath.Join(dir, filepath.Base(p))
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		man, err := readManifest(out)
		if err != nil {
			return "", manifest{}, &BundleError{Digest: digest, Err: fmt.Errorf("unpacked at %s: %w; remove that directory to unpack the bundle again", out, err)}
		}
		return out, man, nil
	}
	b, err := blobs.Get(digest)
	if err != nil {
		return "", manifest{}, &BundleError{Digest: digest, Err: err}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", manifest{}, fmt.Errorf("story bundles: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".unpack-*")
	if err != nil {
		return "", manifest{}, fmt.Errorf("story bundles: %w", err)
	}
	man, err := untar(b, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return "", manifest{}, &BundleError{Digest: digest, Err: fmt.Errorf("not a story bundle this worker can run: %v", err)}
	}
	if err := os.Rename(tmp, out); err != nil {
		os.RemoveAll(tmp)
		if fi, serr := os.Stat(out); serr == nil && fi.IsDir() {
			return out, man, nil // another worker unpacked it first
		}
		return "", manifest{}, fmt.Errorf("story bundles: %w", err)
	}
	return out, man, nil
}

func readManifest(dir string) (manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, BundleManifest))
	if err != nil {
		return manifest{}, fmt.Errorf("no %s: not a story bundle", BundleManifest)
	}
	return parseManifest(b)
}

func parseManifest(b []byte) (manifest, error) {
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return manifest{}, fmt.Errorf("%s: %v", BundleManifest, err)
	}
	if m.Version != bundleVersion {
		return manifest{}, fmt.Errorf("%s: version %d; this worker runs bundles of version %d (upgrade the worker)", BundleManifest, m.Version, bundleVersion)
	}
	for _, d := range m.StoriesPath {
		if d != "." && !fs.ValidPath(d) {
			return manifest{}, fmt.Errorf("%s: stories path %q is not a directory inside the bundle", BundleManifest, d)
		}
	}
	return m, nil
}

// untar writes the bundle's regular files under dir, read-only, refusing
// any entry that is not one, a name that leaves dir or comes twice, and a
// bundle over the limits or without its manifest first.
func untar(b []byte, dir string) (manifest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return manifest{}, err
	}
	defer root.Close()
	tr := tar.NewReader(bytes.NewReader(b))
	var man manifest
	total := 0
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return manifest{}, fmt.Errorf("empty: no %s", BundleManifest)
			}
			return man, nil
		}
		if err != nil {
			return manifest{}, err
		}
		switch {
		case hdr.Typeflag != tar.TypeReg:
			return manifest{}, fmt.Errorf("entry %q is not a regular file", hdr.Name)
		case !fs.ValidPath(hdr.Name) || hdr.Name == ".":
			return manifest{}, fmt.Errorf("entry %q is not a path inside the bundle", hdr.Name)
		case n > MaxBundleFiles || hdr.Size < 0 || hdr.Size > workspace.MaxFileSize || total+int(hdr.Size) > MaxBundleBytes:
			return manifest{}, fmt.Errorf("more than %d files or %d bytes (a file at most %d)", MaxBundleFiles, MaxBundleBytes, workspace.MaxFileSize)
		case (n == 0) != (hdr.Name == BundleManifest):
			return manifest{}, fmt.Errorf("entry %q: a bundle holds %s first, and once", hdr.Name, BundleManifest)
		}
		total += int(hdr.Size)
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return manifest{}, err
		}
		if n == 0 {
			if man, err = parseManifest(data); err != nil {
				return manifest{}, err
			}
		}
		if err := writeEntry(root, hdr.Name, data); err != nil {
			return manifest{}, err
		}
	}
}

// writeEntry writes one file of a bundle, read-only, through root.
func writeEntry(root *os.Root, name string, data []byte) error {
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}
