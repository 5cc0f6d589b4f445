package artifacts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// emit copies the regular file src (inside the workspace) under the
// artifact root as thread names it, with its companion sidecars, and
// returns a handle for it.
func (a *Handlers) emit(call *host.Call, thread, src string) (*host.Result, error) {
	name := call.Namespace
	// The media kinds, and the sidecars that travel with a media file
	// (<stem><suffix> beside the source is copied beside the artifact).
	kinds := []string{"video", "image", "pdf", "html", "slideshow"}
	companions := []string{".chapters.json", ".semantic.json", ".poster.png"}
	kind, _ := call.Args["kind"].(string)
	if !slices.Contains(kinds, kind) {
		return argErr(name, fmt.Errorf("with.kind %q: the media-emit path (with.src_path) needs one of %s", kind, strings.Join(kinds, ", ")))
	}
	if strings.Contains(filepath.ToSlash(src), "../") || strings.HasSuffix(src, "..") {
		return argErr(name, fmt.Errorf("with.src_path %q has a .. component: name the file directly", src))
	}
	if a.ws.IsZero() {
		return argErr(name, errors.New("no workspace is set for this run, so with.src_path cannot be checked"))
	}
	real, err := a.ws.Resolve(a.ws.Dir(), src)
	if err != nil {
		return argErr(name, fmt.Errorf("with.src_path %w", err))
	}
	fi, err := a.ws.Stat(real)
	switch {
	case err != nil:
		return argErr(name, fmt.Errorf("with.src_path %q: %w", src, err))
	case !fi.Mode().IsRegular():
		return argErr(name, fmt.Errorf("with.src_path %q is not a regular file", src))
	}
	dir, err := a.root(call)
	if err != nil {
		return argErr(name, err)
	}
	ext := filepath.Ext(real)
	dst, err := a.target(dir, thread, ext)
	if err != nil {
		return argErr(name, fmt.Errorf("with.thread %w", err))
	}
	mt, _ := call.Args["mime"].(string)
	if mt == "" {
		mt = mimeType(ext)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.ws.MkdirAll(filepath.Dir(dst), outfile.Dir); err != nil {
		return argErr(name, fmt.Errorf("make the artifact directory: %w", err))
	}
	if err := a.copyFile(real, dst); err != nil {
		return argErr(name, err)
	}
	srcStem := strings.TrimSuffix(real, ext)
	dstStem := strings.TrimSuffix(dst, filepath.Ext(dst))
	for _, c := range companions {
		if fi, err := a.ws.Stat(srcStem + c); err == nil && fi.Mode().IsRegular() {
			if err := a.copyFile(srcStem+c, dstStem+c); err != nil {
				return argErr(name, err)
			}
		}
	}
	a.chunks[dst]++
	id := strings.TrimSuffix(filepath.Base(dst), filepath.Ext(dst)) + "#" + strconv.Itoa(a.chunks[dst])
	label, _ := call.Args["label"].(string)
	handle := map[string]any{"id": id, "kind": kind, "mime": mt, "label": label, "path": dst}
	return &host.Result{Data: map[string]any{"ok": true, "handle": handle, "path": dst, "mime": mt, "kind": kind}}, nil
}

// copyFile copies the regular file src to dst, replacing dst, both opened
// through the workspace root.
func (a *Handlers) copyFile(src, dst string) (err error) {
	in, err := a.ws.Open(src)
	if err != nil {
		return fmt.Errorf("copy artifact: %w", err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("copy artifact: %s is not a regular file", src)
	}
	out, err := a.ws.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, outfile.File)
	if err != nil {
		return fmt.Errorf("copy artifact: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("copy artifact %s: %w", dst, cerr)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy artifact %s: %w", dst, err)
	}
	return nil
}

// mimeType is the MIME type of a media file by its extension, from a fixed
// table (not the machine's mime.types, so every machine answers the same).
func mimeType(ext string) string {
	switch strings.ToLower(ext) {
	case ".mp4":
		return "video/mp4"
	case ".webm":
		return "video/webm"
	case ".mov":
		return "video/quicktime"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".svg":
		return "image/svg+xml"
	case ".pdf":
		return "application/pdf"
	case ".html", ".htm":
		return "text/html; charset=utf-8"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}
