// Package artifacts is the artifact handlers: host.artifacts_dir writes one
// file per thread, host.append_to_file appends every chunk to one file,
// host.artifacts_dir.list lists what a session wrote. Each session has its
// own directory, <workspace>/.kitsoki/artifacts/<session id>/; every path
// stays inside it.
package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// The handler names.
const (
	DirName      = "host.artifacts_dir"
	DirPost      = "host.artifacts_dir.post"
	DirList      = "host.artifacts_dir.list"
	AppendName   = "host.append_to_file"
	AppendPost   = "host.append_to_file.post"
	DefaultFile  = "transcript.md"
	separator    = "\n\n---\n\n"
	maxNameBytes = 200
)

// Root is where session directories live, relative to the workspace.
const Root = ".kitsoki/artifacts"

// Handlers serves the artifact handlers of one run.
type Handlers struct {
	ws workspace.Root

	mu     sync.Mutex
	chunks map[string]int // chunks written per file path, for message ids
}

// New returns the handlers for the workspace ws.
func New(ws workspace.Root) *Handlers {
	return &Handlers{ws: ws, chunks: map[string]int{}}
}

// Register installs the artifact handlers on h.
func Register(h *host.Host, ws workspace.Root) {
	a := New(ws)
	h.Register(DirName, host.HandlerFunc(a.write))
	h.Register(DirPost, host.HandlerFunc(a.write))
	h.Register(DirList, host.HandlerFunc(a.list))
	h.Register(AppendName, host.HandlerFunc(a.append))
	h.Register(AppendPost, host.HandlerFunc(a.append))
}

// SessionDir is the artifact directory of session: the session id made
// path-safe.
func (a *Handlers) SessionDir(session string) (string, error) {
	if a.ws.IsZero() {
		return "", errors.New("no workspace is set for this run, so there is no artifact directory")
	}
	s := Sanitize(session)
	if s == "" {
		s = "no-session"
	}
	return filepath.Join(a.ws.Dir(), filepath.FromSlash(Root), s), nil
}

// Sanitize makes name a safe file name: letters, digits, '.', '-' and '_'
// are kept, every other run of characters becomes one '-', leading dots
// and dashes are dropped (no hidden files, no "..") and the result is cut
// to 200 bytes.
func Sanitize(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		ok := r == '.' || r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimLeft(b.String(), ".-")
	s = strings.TrimRight(s, "-")
	if len(s) > maxNameBytes {
		s = s[:maxNameBytes]
	}
	return s
}

// root is the directory a call writes in: with.artifacts_root (or its
// other name with.workdir), inside the workspace, else the session's
// artifact directory.
func (a *Handlers) root(call *host.Call) (string, error) {
	key := "artifacts_root"
	raw, ok := call.Args[key]
	if w, wok := call.Args["workdir"]; wok && w != nil && w != "" {
		if ok && raw != nil && raw != "" {
			return "", errors.New("with.workdir and with.artifacts_root both name the directory to write in: give one of them")
		}
		key, raw, ok = "workdir", w, true
	}
	if !ok || raw == nil || raw == "" {
		return a.SessionDir(call.SessionID)
	}
	name, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a directory path, got %T", key, raw)
	}
	if a.ws.IsZero() {
		return "", fmt.Errorf("no workspace is set for this run, so with.%s cannot be checked", key)
	}
	real, err := a.ws.Resolve(a.ws.Dir(), name)
	if err != nil {
		return "", fmt.Errorf("with.%s %w", key, err)
	}
	return real, nil
}

// target is the file thread names in dir: each path segment sanitised, a
// bare name (no extension, no separator) given ext.
func (a *Handlers) target(dir, thread, ext string) (string, error) {
	segs := strings.Split(strings.ReplaceAll(thread, "\\", "/"), "/")
	clean := make([]string, 0, len(segs))
	for _, s := range segs {
		if s == ".." {
			return "", fmt.Errorf("%q climbs out of the artifact directory with ..: name a file inside it", thread)
		}
		if s = Sanitize(s); s != "" {
			clean = append(clean, s)
		}
	}
	if len(clean) == 0 {
		return "", fmt.Errorf("%q has no usable file name: use letters, digits, '.', '-' or '_'", thread)
	}
	if len(clean) == 1 && filepath.Ext(clean[0]) == "" {
		clean[0] += ext
	}
	path := filepath.Join(append([]string{dir}, clean...)...)
	if err := a.confine(path); err != nil {
		return "", err
	}
	return path, nil
}

// confine refuses a path that a symlink takes out of the workspace.
func (a *Handlers) confine(path string) error {
	_, err := a.ws.Resolve(a.ws.Dir(), path)
	return err
}

func (a *Handlers) write(_ context.Context, call *host.Call) (*host.Result, error) {
	name := call.Namespace
	thread, ok := call.Args["thread"].(string)
	if !ok || strings.TrimSpace(thread) == "" {
		return argErr(name, errors.New("with.thread is required: the file name under the session's artifact directory"))
	}
	if src, ok := call.Args["src_path"].(string); ok && src != "" {
		return a.emit(call, thread, src)
	}
	body, ok := call.Args["body"]
	if !ok {
		return argErr(name, errors.New("with.body is required: the text to write (or with.src_path, a file to copy)"))
	}
	mode := "append"
	if m, ok := call.Args["mode"].(string); ok && m != "" {
		mode = m
	}
	if mode != "append" && mode != "replace" {
		return argErr(name, fmt.Errorf("with.mode %q: use append or replace", mode))
	}
	dir, err := a.root(call)
	if err != nil {
		return argErr(name, err)
	}
	path, err := a.target(dir, thread, ".md")
	if err != nil {
		return argErr(name, fmt.Errorf("with.thread %w", err))
	}
	id, err := a.put(path, chunk(call.Args, body), mode == "replace")
	if err != nil {
		return argErr(name, err)
	}
	return &host.Result{Data: map[string]any{"ok": true, "path": path, "message_id": id}}, nil
}

func (a *Handlers) append(_ context.Context, call *host.Call) (*host.Result, error) {
	name := call.Namespace
	body, ok := call.Args["body"]
	if !ok {
		return argErr(name, errors.New("with.body is required: the text to append"))
	}
	file := DefaultFile
	if f, ok := call.Args["file"].(string); ok && f != "" {
		file = f
	}
	dir, err := a.SessionDir(call.SessionID)
	if err != nil {
		return argErr(name, err)
	}
	path, err := a.target(dir, file, ".md")
	if err != nil {
		return argErr(name, fmt.Errorf("with.file %w", err))
	}
	text := chunk(call.Args, body)
	if t, ok := call.Args["thread"].(string); ok && t != "" {
		text = "<!-- thread: " + strings.ReplaceAll(t, "--", "- -") + " -->\n" + text
	}
	id, err := a.put(path, text, false)
	if err != nil {
		return argErr(name, err)
	}
	return &host.Result{Data: map[string]any{"ok": true, "path": path, "message_id": id}}, nil
}

func (a *Handlers) list(_ context.Context, call *host.Call) (*host.Result, error) {
	dir, err := a.SessionDir(call.SessionID)
	if err != nil {
		return argErr(call.Namespace, err)
	}
	var items []any
	err = a.ws.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		items = append(items, map[string]any{"name": filepath.ToSlash(rel), "path": p, "size": fi.Size()})
		return nil
	})
	if err != nil {
		return argErr(call.Namespace, fmt.Errorf("list %s: %w", dir, err))
	}
	sort.Slice(items, func(i, j int) bool {
		return items[i].(map[string]any)["name"].(string) < items[j].(map[string]any)["name"].(string)
	})
	if items == nil {
		items = []any{}
	}
	return &host.Result{Data: map[string]any{"ok": true, "dir": dir, "artifacts": items}}, nil
}

// put writes text to path (appending after a separator unless replace) and
// returns the message id.
func (a *Handlers) put(path, text string, replace bool) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Through the workspace root: a directory or file of the path that a
	// symlink replaced after target checked it cannot lead the write out.
	if err := a.ws.MkdirAll(filepath.Dir(path), outfile.Dir); err != nil {
		return "", fmt.Errorf("make the artifact directory: %w", err)
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if replace {
		flag = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := a.ws.OpenFile(path, flag, outfile.File)
	if err != nil {
		return "", fmt.Errorf("write artifact: %w", err)
	}
	var prefix string
	if fi, err := f.Stat(); err == nil && !replace && fi.Size() > 0 {
		prefix = separator
	}
	_, werr := f.WriteString(prefix + text + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("write artifact %s: %w", path, werr)
	}
	if replace {
		a.chunks[path] = 0
	}
	a.chunks[path]++
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return base + "#" + strconv.Itoa(a.chunks[path]), nil
}

// chunk is the text of one write: ### title, the body, _phase: id_.
func chunk(args map[string]any, body any) string {
	var b strings.Builder
	if t, ok := args["title"].(string); ok && t != "" {
		b.WriteString("### " + t + "\n\n")
	}
	b.WriteString(bodyText(body))
	if p, ok := args["phase_id"].(string); ok && p != "" {
		b.WriteString("\n\n_phase: " + p + "_")
	}
	return b.String()
}

// bodyText writes a body out: strings as they are, maps and lists as
// indented JSON, anything else as fmt prints it.
func bodyText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, err := json.MarshalIndent(x, "", "  ")
		if err == nil {
			return string(b)
		}
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func argErr(name string, err error) (*host.Result, error) {
	return &host.Result{Data: map[string]any{"ok": false}, Err: fmt.Errorf("%s: %w", name, err)}, nil
}
