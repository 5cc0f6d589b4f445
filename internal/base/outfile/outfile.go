// Package outfile is how kitsoki writes the files a run or a command
// leaves behind (journals and traces, session index entries, cassettes,
// trace pages, eval and flow reports, drawings, artifacts): private to
// the user, 0600 files in 0700 directories, whatever the umask. They can
// hold prompts, answers and world data, so none is readable by others.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const (
	// File is the mode of every file kitsoki writes.
	File fs.FileMode = 0o600
	// Dir is the mode of every directory kitsoki creates for them.
	Dir fs.FileMode = 0o700
)

// MkdirAll creates dir and its missing parents with mode Dir (existing
// ones keep theirs).
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, Dir); err != nil {
		return err
	}
	return nil
}

// WriteFile writes b to path atomically (a temporary file in the same
// directory, renamed over path) with mode File, so an existing file that
// was readable by others is replaced by a private one. Missing parent
// directories are not created (MkdirAll). A path that exists and is not
// a regular file (/dev/stdout, a pipe) is written in place.
func WriteFile(path string, b []byte) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, b, File)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), File)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
