package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A media element of a view (media: {handle, path, kind, caption}) is
// shown as an <img> or a <video> when its path: names a file the
// server may read: one inside the story's directory or the workspace
// (Config.Workspace), a relative path read against the workspace (the
// story's directory when none is set). The page loads it from the server
// (/api/sessions/ID/media/N, N the element's index in the view), never
// from elsewhere: a handle that is an http(s) address stays a link, so
// that nothing a story or an agent writes makes the page fetch an address
// by itself.

// mediaTag is the kind of element a media kind is shown as ("" for none:
// a kind the page does not play, pdf, html or slideshow, is a caption and
// a link).
func mediaTag(kind string) string {
	switch kind {
	case "image", "video":
		return kind
	}
	return ""
}

// mediaFile resolves a media element's path: the file inside one of the
// roots it is read in (the story's directory, the workspace), opened
// through an os.Root so that no link leads out of it.
func (s *Server) mediaFile(si *storyInfo, path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("the element names no file (path:)")
	}
	roots := []string{filepath.Dir(si.File)}
	base := roots[0]
	if s.cfg.Workspace != "" {
		roots = append(roots, s.cfg.Workspace)
		base = s.cfg.Workspace
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	for _, root := range roots {
		rel, err := filepath.Rel(root, filepath.Clean(abs))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, err
		}
		f, err := r.Open(rel)
		r.Close()
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s is outside the story's directory and the workspace: the page shows files from there only", path)
}

// mediaSrc is where the page loads element i of the view from, "" when
// the element is not one the page plays or its file cannot be read.
func (l *live) mediaSrc(i int, kind, path string) string {
	if mediaTag(kind) == "" || path == "" {
		return ""
	}
	if _, err := mediaType(kind, path); err != nil {
		return ""
	}
	f, err := l.srv.mediaFile(l.story, path)
	if err != nil {
		return ""
	}
	f.Close()
	return "/api/sessions/" + url.PathEscape(l.id) + "/media/" + strconv.Itoa(i) + "?turn=" + strconv.FormatInt(l.last.Turn, 10)
}

// media serves the file of media element {n} of the session's current
// view.
func (s *Server) media(w http.ResponseWriter, r *http.Request) {
	l, err := s.lookup(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	l.mu.Lock()
	var kind, path string
	if st := l.last; err == nil && st != nil && n >= 0 && n < len(st.ViewDoc) && st.ViewDoc[n].Media != nil {
		kind, path = st.ViewDoc[n].Media.Kind, st.ViewDoc[n].Media.Path
	}
	l.mu.Unlock()
	if mediaTag(kind) == "" {
		http.Error(w, "the view has no media element "+r.PathValue("n")+" the page plays", http.StatusNotFound)
		return
	}
	f, err := s.mediaFile(l.story, path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		http.Error(w, path+" is not a file", http.StatusNotFound)
		return
	}
	ct, err := mediaType(kind, path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// mediaTypes are the files the page plays, by extension: a fixed table,
// so that what is served does not hang on the machine's mime.types.
var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".avif": "image/avif", ".svg": "image/svg+xml",
	".mp4": "video/mp4", ".m4v": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg", ".mov": "video/quicktime",
}

// mediaType is the content type of path, by its extension, when it is a
// file of kind (image/…, video/…).
func mediaType(kind, path string) (string, error) {
	ct := mediaTypes[strings.ToLower(filepath.Ext(path))]
	if !strings.HasPrefix(ct, kind+"/") {
		return "", fmt.Errorf("%s is not %s %s file the page plays (by its name: %s)", path, article(kind), kind, strings.Join(extsOf(kind), ", "))
	}
	return ct, nil
}

// extsOf lists the extensions of kind, sorted.
func extsOf(kind string) []string {
	var out []string
	for ext, ct := range mediaTypes {
		if strings.HasPrefix(ct, kind+"/") {
			out = append(out, ext)
		}
	}
	slices.Sort(out)
	return out
}

func article(kind string) string {
	if kind == "image" {
		return "an"
	}
	return "a"
}
