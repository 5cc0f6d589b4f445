package localllm

import (
	"archive/tar"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// releaseMarker is written last into an extracted release directory; its
// content is the sha256 of the archive it came from. A directory without it
// (an interrupted extraction) is rebuilt.
const releaseMarker = ".kitsoki-release"

// extractFlat unpacks a .tar.gz into dir with every entry at the top level:
// llama.cpp release archives keep the binary and its libggml*/libllama*
// libraries in a nested build/bin/ directory, and flattening lets the server
// run with dir alone on LD_LIBRARY_PATH. Symlinks (the SONAME chain
// libllama.so -> libllama.so.0 -> ...) are kept, re-pointed at the flattened
// name. The extraction goes to a temporary sibling and is renamed into
// place, so dir is either complete or absent.
func extractFlat(archive, dir, sum string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("extract %s: %w", filepath.Base(archive), err)
	}
	defer os.RemoveAll(tmp)
	if err := untarFlat(archive, tmp); err != nil {
		return fmt.Errorf("extract %s: %w", filepath.Base(archive), err)
	}
	if _, err := os.Stat(filepath.Join(tmp, serverName)); err != nil {
		return fmt.Errorf("extract %s: the archive has no %s", filepath.Base(archive), serverName)
	}
	if err := os.WriteFile(filepath.Join(tmp, releaseMarker), []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Errorf("extract %s: %w", filepath.Base(archive), err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("extract %s: remove stale %s: %w", filepath.Base(archive), dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("extract %s: %w", filepath.Base(archive), err)
	}
	return nil
}

// releaseComplete reports whether dir holds a finished extraction of the
// archive whose sha256 is sum.
func releaseComplete(dir, sum string) bool {
	b, err := os.ReadFile(filepath.Join(dir, releaseMarker))
	return err == nil && strings.TrimSpace(string(b)) == sum
}

func untarFlat(archive, dir string) error {
	fh, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Base(h.Name)
		if name == "." || name == ".." || name == "/" || name == releaseMarker {
			continue
		}
		dest := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeReg:
			if err := writeFile(dest, tr, h.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.Remove(dest)
			if err := os.Symlink(path.Base(h.Linkname), dest); err != nil {
				return err
			}
		case tar.TypeLink:
			src := filepath.Join(dir, path.Base(h.Linkname))
			in, err := os.Open(src)
			if err != nil {
				return fmt.Errorf("hard link %s: %w", h.Name, err)
			}
			err = writeFile(dest, in, 0o755)
			in.Close()
			if err != nil {
				return err
			}
		}
	}
}

// extractMember copies one file out of a .tar.bz2 (a conda package) to
// dest, atomically.
func extractMember(archive, member, dest string) error {
	fh, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer fh.Close()
	tr := tar.NewReader(bzip2.NewReader(fh))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("extract %s: no member %s", filepath.Base(archive), member)
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", filepath.Base(archive), err)
		}
		if strings.TrimPrefix(h.Name, "./") != member || h.Typeflag != tar.TypeReg {
			continue
		}
		tmp := dest + ".tmp"
		if err := writeFile(tmp, tr, 0o755); err != nil {
			return fmt.Errorf("extract %s: %w", member, err)
		}
		return os.Rename(tmp, dest)
	}
}

func writeFile(dest string, r io.Reader, perm os.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	_ = os.Remove(dest) // never write through a symlink left by an earlier entry
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
