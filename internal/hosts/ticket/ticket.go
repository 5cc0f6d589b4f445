// Package ticket is host.local_files.ticket: the file-backed provider of
// the ticket host interface (iface.ticket), the default Kitsoki's stories
// bind it to. Tickets are Markdown files inside the workspace:
//
//	<root>/issues/bugs/<id>.md      type bug
//	<root>/issues/features/<id>.md  type feature
//	<root>/issues/epics/<id>.md     type epic
//
// each an optional YAML front matter block between --- lines (title,
// status, severity, assignee, url, repro_command, any other key), a
// Markdown body, and the comments appended below it as
// "## Comment <RFC 3339 time> by <author>" sections. <root> is the
// workspace, or with.root inside it. The operations are search, get,
// comment, transition and list_mine, as host.local_files.ticket.<op> or
// the bare handler with with.op. Every failure is a domain error of the
// call (on_error fires), with ok: false.
package ticket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the handler; Name + "." + op serves one operation.
const Name = "host.local_files.ticket"

// Ops are the operations, in the order the messages list them.
var Ops = []string{"search", "get", "comment", "transition", "list_mine"}

// kinds are the issues/ directories scanned, with the type each gives.
var kinds = []struct{ Type, Dir string }{{"bug", "bugs"}, {"feature", "features"}, {"epic", "epics"}}

// DefaultAuthor signs a comment that names no author.
const DefaultAuthor = "kitsoki"

// Config is what the handler needs of the run.
type Config struct {
	Workspace workspace.Root // every ticket file lies inside it
	Clock     clock.Clock    // stamps comments (nil: the system clock)
}

// Register adds host.local_files.ticket and its per-operation names to h.
func Register(h *host.Host, cfg Config) {
	t := &Tickets{cfg: cfg}
	h.Register(Name, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		op, ok := call.Args["op"].(string)
		switch {
		case call.Args["op"] != nil && !ok:
			return fail(Name, fmt.Errorf("with.op must be a string, got %T", call.Args["op"])), nil
		case op == "":
			return fail(Name, fmt.Errorf("with.op is required: one of %s (or invoke %s.<op>)", strings.Join(Ops, ", "), Name)), nil
		}
		return t.Invoke(call, op), nil
	}))
	for _, op := range Ops {
		h.Register(Name+"."+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			return t.Invoke(call, op), nil
		}))
	}
}

// Tickets serves the operations.
type Tickets struct{ cfg Config }

// New returns the handler's operations over cfg (Register uses it).
func New(cfg Config) *Tickets { return &Tickets{cfg: cfg} }

func fail(name string, err error) *host.Result {
	return &host.Result{Data: map[string]any{"ok": false}, Err: fmt.Errorf("%s: %w", name, err)}
}

// Invoke runs op with the call's arguments.
func (t *Tickets) Invoke(call *host.Call, op string) *host.Result {
	name := Name + "." + op
	if !slices.Contains(Ops, op) {
		return fail(Name, fmt.Errorf("with.op %q is not an operation (operations: %s)", op, strings.Join(Ops, ", ")))
	}
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err)
	}
	if repo, err := str(call.Args, "repo"); err != nil {
		return fail(name, err)
	} else if repo != "" {
		return fail(name, fmt.Errorf("with.repo is %q, but %s reads the workspace's issues/ files, not a hosted repository: leave repo empty, or bind iface.ticket to a provider of that repository", repo, Name))
	}
	root, err := t.root(call.Args)
	if err != nil {
		return fail(name, err)
	}
	var data map[string]any
	switch op {
	case "search":
		data, err = t.search(root, call.Args)
	case "get":
		data, err = t.get(root, call.Args)
	case "comment":
		data, err = t.comment(root, call.Args)
	case "transition":
		data, err = t.transition(root, call.Args)
	case "list_mine":
		data, err = t.listMine(root, call.Args)
	}
	if err != nil {
		return fail(name, err)
	}
	data["ok"] = true
	return &host.Result{Data: data}
}

func str(args map[string]any, key string) (string, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", key, v)
	}
	return s, nil
}

func required(args map[string]any, key, example string) (string, error) {
	s, err := str(args, key)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("with.%s is required (e.g. %s: %s)", key, key, example)
	}
	return s, nil
}

// root is the directory issues/ lies under: the workspace, or with.root
// resolved inside it.
func (t *Tickets) root(args map[string]any) (string, error) {
	ws := t.cfg.Workspace
	if ws.IsZero() {
		return "", errors.New("no workspace: the run has no directory to keep tickets in")
	}
	r, err := str(args, "root")
	if err != nil || r == "" {
		return ws.Dir(), err
	}
	p, err := ws.Resolve(ws.Dir(), r)
	if err != nil {
		return "", fmt.Errorf("with.root: %w", err)
	}
	return p, nil
}

// checkID refuses an id that is not a plain file name.
func checkID(id string) error {
	if id == "." || id == ".." || strings.ContainsAny(id, "/\\\x00") || strings.HasSuffix(id, ".md") {
		return fmt.Errorf("with.id %q is not a ticket id: write the file name under issues/<type>/ without .md, e.g. 2026-05-14-esc-hang", id)
	}
	return nil
}

// find locates issues/<dir>/<id>.md under root.
func (t *Tickets) find(root, id string) (path, typ string, err error) {
	if err := checkID(id); err != nil {
		return "", "", err
	}
	var tried []string
	for _, k := range kinds {
		rel := filepath.Join("issues", k.Dir, id+".md")
		p, err := t.cfg.Workspace.Resolve(root, rel)
		if err != nil {
			return "", "", err
		}
		if _, err := t.cfg.Workspace.Stat(p); err == nil {
			return p, k.Type, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		tried = append(tried, filepath.ToSlash(rel))
	}
	return "", "", fmt.Errorf("ticket %q not found: there is no %s under %s", id, strings.Join(tried, ", "), root)
}

// rel is path as the messages show it: relative to the workspace.
func (t *Tickets) rel(path string) string {
	if r, err := filepath.Rel(t.cfg.Workspace.Dir(), path); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return path
}

// file is one parsed ticket file.
type file struct {
	ID, Type, Path string
	front          *yaml.Node // the front matter mapping; nil when the file has none
	fields         map[string]any
	body           string // the Markdown between the front matter and the first comment
	comments       []comment
}

type comment struct{ At, Author, Body string }

const commentPrefix = "## Comment "

func (t *Tickets) read(path, typ string) (*file, error) {
	b, err := t.cfg.Workspace.Read(path, t.rel(path))
	if err != nil {
		return nil, err
	}
	f := &file{ID: strings.TrimSuffix(filepath.Base(path), ".md"), Type: typ, Path: path, fields: map[string]any{}}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	rest := text
	if fm, after, ok := splitFront(text); ok {
		if after < 0 {
			return nil, fmt.Errorf("%s:1: the front matter opened with --- is never closed: end it with a line holding only ---", t.rel(path))
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(fm), &doc); err != nil {
			return nil, fmt.Errorf("%s: front matter (line 1 is the first line after ---): %w", t.rel(path), err)
		}
		if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
			return nil, fmt.Errorf("%s: front matter (line 1 is the first line after ---): %w", t.rel(path), err)
		}
		if len(doc.Content) == 1 {
			if doc.Content[0].Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s:2: the front matter must be a mapping of key: value lines", t.rel(path))
			}
			f.front = doc.Content[0]
			if err := f.front.Decode(&f.fields); err != nil {
				return nil, fmt.Errorf("%s: front matter: %w", t.rel(path), err)
			}
		}
		rest = text[after:]
	}
	lines := strings.Split(rest, "\n")
	first := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, commentPrefix) })
	if first < 0 {
		f.body = strings.TrimRight(rest, "\n")
		return f, nil
	}
	f.body = strings.TrimRight(strings.Join(lines[:first], "\n"), "\n")
	var cur *comment
	var buf []string
	flush := func() {
		if cur != nil {
			cur.Body = strings.Trim(strings.Join(buf, "\n"), "\n")
			f.comments = append(f.comments, *cur)
		}
	}
	for _, l := range lines[first:] {
		if strings.HasPrefix(l, commentPrefix) {
			flush()
			head := strings.TrimSpace(strings.TrimPrefix(l, commentPrefix))
			at, author, _ := strings.Cut(head, " by ")
			cur, buf = &comment{At: strings.TrimSpace(at), Author: strings.TrimSpace(author)}, nil
			continue
		}
		buf = append(buf, l)
	}
	flush()
	return f, nil
}

// splitFront finds the front matter of text: ok when text opens with a
// "---" line; fm is the YAML between it and the next line holding only
// "---", after the offset where the rest of the file starts (-1 when no
// closing line follows).
func splitFront(text string) (fm string, after int, ok bool) {
	if !strings.HasPrefix(text, "---\n") {
		return "", 0, false
	}
	for i := 3; i < len(text); {
		j := strings.Index(text[i:], "\n---")
		if j < 0 {
			break
		}
		end := i + j + 4 // just past the closing ---
		if end == len(text) || text[end] == '\n' {
			if end < len(text) {
				end++
			}
			return text[4 : i+j+1], end, true
		}
		i = end
	}
	return "", -1, true
}

func (f *file) str(key string) string {
	if s, ok := f.fields[key].(string); ok {
		return s
	}
	return ""
}

// title is the front matter's title, else the body's first "# " heading,
// else the id.
func (f *file) title() string {
	if s := f.str("title"); s != "" {
		return s
	}
	for _, l := range strings.Split(f.body, "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "# "); ok {
			return strings.TrimSpace(s)
		}
	}
	return f.ID
}

// summary is a ticket as search and list_mine list it.
func (t *Tickets) summary(f *file) map[string]any {
	return map[string]any{
		"id": f.ID, "type": f.Type, "title": f.title(), "status": f.str("status"), "severity": f.str("severity"),
		"assignee": f.str("assignee"), "url": f.str("url"), "repro_command": f.str("repro_command"), "path": t.rel(f.Path),
	}
}

// all reads every ticket under root: P0 first (unranked last), then the
// newest id first. A file that does not parse is left out and listed in
// skipped.
func (t *Tickets) all(root string) ([]*file, []any, error) {
	var out []*file
	skipped := []any{}
	for _, k := range kinds {
		dir, err := t.cfg.Workspace.Resolve(root, filepath.Join("issues", k.Dir))
		if err != nil {
			return nil, nil, err
		}
		entries, err := t.cfg.Workspace.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			p, err := t.cfg.Workspace.Resolve(dir, e.Name())
			if err != nil {
				skipped = append(skipped, map[string]any{"path": t.rel(filepath.Join(dir, e.Name())), "error": err.Error()})
				continue
			}
			f, err := t.read(p, k.Type)
			if err != nil {
				skipped = append(skipped, map[string]any{"path": t.rel(p), "error": err.Error()})
				continue
			}
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i].str("severity")), rank(out[j].str("severity"))
		if ri != rj {
			return ri < rj
		}
		return out[i].ID > out[j].ID
	})
	return out, skipped, nil
}

func rank(severity string) int {
	switch strings.ToUpper(strings.TrimSpace(severity)) {
	case "P0":
		return 0
	case "P1":
		return 1
	case "P2":
		return 2
	case "P3":
		return 3
	}
	return 4
}

func limitArg(args map[string]any) (int, error) {
	v, ok := args["limit"]
	if !ok || v == nil {
		return 0, nil
	}
	var n float64
	switch x := v.(type) {
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		return 0, fmt.Errorf("with.limit must be a whole number (0 for no limit), got %v (%T)", v, v)
	}
	if n < 0 || n != math.Trunc(n) {
		return 0, fmt.Errorf("with.limit must be a whole number (0 for no limit), got %v", v)
	}
	return int(n), nil
}

func (t *Tickets) search(root string, args map[string]any) (map[string]any, error) {
	query, err := str(args, "query")
	if err != nil {
		return nil, err
	}
	limit, err := limitArg(args)
	if err != nil {
		return nil, err
	}
	files, skipped, err := t.all(root)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(query))
	list := []any{}
	for _, f := range files {
		if q != "" && !strings.Contains(strings.ToLower(f.title()+"\n"+f.body), q) {
			continue
		}
		if limit > 0 && len(list) == limit {
			break
		}
		list = append(list, t.summary(f))
	}
	return map[string]any{"tickets": list, "skipped": skipped}, nil
}

func (t *Tickets) listMine(root string, args map[string]any) (map[string]any, error) {
	filter, err := str(args, "filter")
	if err != nil {
		return nil, err
	}
	filter = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(filter), "assignee=")))
	files, skipped, err := t.all(root)
	if err != nil {
		return nil, err
	}
	list := []any{}
	for _, f := range files {
		if filter != "" && !strings.Contains(strings.ToLower(f.str("assignee")), filter) {
			continue
		}
		list = append(list, t.summary(f))
	}
	return map[string]any{"tickets": list, "skipped": skipped}, nil
}

func (t *Tickets) get(root string, args map[string]any) (map[string]any, error) {
	id, err := required(args, "id", "2026-05-14-esc-hang")
	if err != nil {
		return nil, err
	}
	p, typ, err := t.find(root, id)
	if err != nil {
		return nil, err
	}
	f, err := t.read(p, typ)
	if err != nil {
		return nil, err
	}
	data := t.summary(f)
	data["body"] = f.body
	cs := []any{}
	for i, c := range f.comments {
		cs = append(cs, map[string]any{"id": fmt.Sprintf("%s#%d", f.ID, i+1), "author": c.Author, "created_at": c.At, "body": c.Body})
	}
	data["comments"] = cs
	return data, nil
}

// commentTarget is the file a comment goes to: with.thread when it names a
// .md file (relative to the root), else the ticket with.id.
func (t *Tickets) commentTarget(root string, args map[string]any) (string, string, error) {
	thread, err := str(args, "thread")
	if err != nil {
		return "", "", err
	}
	if strings.HasSuffix(thread, ".md") {
		p, err := t.cfg.Workspace.Resolve(root, thread)
		if err != nil {
			return "", "", fmt.Errorf("with.thread: %w", err)
		}
		if _, err := t.cfg.Workspace.Stat(p); err != nil {
			return "", "", fmt.Errorf("with.thread %q: no such ticket file under %s", thread, root)
		}
		return p, "", nil
	}
	id, err := str(args, "id")
	if err != nil {
		return "", "", err
	}
	if strings.TrimSpace(id) == "" {
		return "", "", errors.New("with.id is required (or with.thread naming a ticket's .md file)")
	}
	return t.find(root, id)
}

func (t *Tickets) comment(root string, args map[string]any) (map[string]any, error) {
	body, err := required(args, "body", "\"Fixed in abc123.\"")
	if err != nil {
		return nil, err
	}
	author, err := str(args, "author")
	if err != nil {
		return nil, err
	}
	if author = strings.TrimSpace(author); author == "" {
		author = DefaultAuthor
	}
	if strings.ContainsAny(author, "\n\r") {
		return nil, errors.New("with.author must be one line")
	}
	p, typ, err := t.commentTarget(root, args)
	if err != nil {
		return nil, err
	}
	f, err := t.read(p, typ)
	if err != nil {
		return nil, err
	}
	raw, err := t.cfg.Workspace.Read(p, t.rel(p))
	if err != nil {
		return nil, err
	}
	var clk clock.Clock = clock.System{}
	if t.cfg.Clock != nil {
		clk = t.cfg.Clock
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(raw, "\n"))
	fmt.Fprintf(&b, "\n\n%s%s by %s\n\n%s\n", commentPrefix, clk.Now().UTC().Format(time.RFC3339), author, strings.Trim(body, "\n"))
	if err := t.writeFile(p, b.Bytes()); err != nil {
		return nil, err
	}
	return map[string]any{"comment_id": fmt.Sprintf("%s#%d", f.ID, len(f.comments)+1)}, nil
}

func (t *Tickets) transition(root string, args map[string]any) (map[string]any, error) {
	id, err := required(args, "id", "2026-05-14-esc-hang")
	if err != nil {
		return nil, err
	}
	to, err := required(args, "to", "resolved")
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(to, "\n\r") {
		return nil, errors.New("with.to must be one line")
	}
	p, typ, err := t.find(root, id)
	if err != nil {
		return nil, err
	}
	f, err := t.read(p, typ)
	if err != nil {
		return nil, err
	}
	raw, err := t.cfg.Workspace.Read(p, t.rel(p))
	if err != nil {
		return nil, err
	}
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	front := f.front
	if front == nil { // no front matter, or an empty one
		front = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	rest := text
	if _, after, ok := splitFront(text); ok {
		rest = text[after:]
	}
	set := false
	for i := 0; i+1 < len(front.Content); i += 2 {
		if front.Content[i].Value == "status" {
			front.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: to}
			set = true
		}
	}
	if !set {
		front.Content = append(front.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "status"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: to})
	}
	var fm bytes.Buffer
	enc := yaml.NewEncoder(&fm)
	enc.SetIndent(2)
	if err := enc.Encode(front); err != nil {
		return nil, fmt.Errorf("%s: writing the front matter: %w", t.rel(p), err)
	}
	_ = enc.Close()
	out := "---\n" + fm.String() + "---\n" + rest
	if err := t.writeFile(p, []byte(out)); err != nil {
		return nil, err
	}
	return map[string]any{"id": f.ID, "status": to}, nil
}

// writeFile replaces path's content through a temporary file in its
// directory, keeping the file's mode, every step through the workspace
// root (a directory a symlink replaced after the path was checked cannot
// lead the write out).
func (t *Tickets) writeFile(path string, b []byte) error {
	ws := t.cfg.Workspace
	mode := fs.FileMode(0o644)
	if st, err := ws.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	var tmp *os.File
	var err error
	for i := 0; ; i++ {
		name := filepath.Join(filepath.Dir(path), fmt.Sprintf(".ticket-%d-%d", os.Getpid(), i))
		tmp, err = ws.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || i >= 100 {
			break
		}
	}
	if err != nil {
		return err
	}
	tmpName := filepath.Join(filepath.Dir(path), filepath.Base(tmp.Name()))
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = ws.Chmod(tmpName, mode)
	}
	if werr == nil {
		werr = ws.Rename(tmpName, path)
	}
	if werr != nil {
		_ = ws.Remove(tmpName)
	}
	return werr
}
