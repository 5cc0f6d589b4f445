package gitwt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// WorktreeName is the invoke name of the workspace provider; each op is
// also its own handler, WorktreeName + "." + op.
const WorktreeName = "host.git_worktree"

// Root is where worktrees live, relative to the workspace: Root/<id>, the
// layout Kitsoki's stories name their work directories by
// (.worktrees/<id>).
const Root = ".worktrees"

// Owners is where the session that made each worktree is recorded,
// relative to the workspace: Owners/<id>.json. A worktree another session
// made is not handed to this one.
const Owners = ".kitsoki/worktrees"

// Ops are the operations of the workspace interface, in the order the
// catalog lists them.
var opNames = []string{"list", "get", "create", "sync", "cleanup_scan", "cleanup_apply"}

// Ops returns the operation names.
func Ops() []string { return slices.Clone(opNames) }

// Worktrees is host.git_worktree for one run.
type Worktrees struct{ cfg Config }

// NewWorktrees returns the handler.
func NewWorktrees(cfg Config) *Worktrees {
	cfg.defaults()
	return &Worktrees{cfg: cfg}
}

// Register installs host.git_worktree, host.git_worktree.<op> and
// host.diff.open on h.
func Register(h *host.Host, cfg Config) {
	w := NewWorktrees(cfg)
	h.Register(WorktreeName, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		op, err := str(call.Args, "op")
		if err == nil && op == "" {
			err = fmt.Errorf("with.op is required: one of %s (or invoke %s.<op>)", strings.Join(opNames, ", "), WorktreeName)
		}
		if err != nil {
			return fail(WorktreeName, err), nil
		}
		return w.Invoke(ctx, call, op), nil
	}))
	for _, op := range opNames {
		h.Register(WorktreeName+"."+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			return w.Invoke(ctx, call, op), nil
		}))
	}
	h.Register(DiffName, NewDiff(cfg))
}

func fail(name string, err error) *host.Result {
	return &host.Result{Data: map[string]any{"ok": false}, Err: fmt.Errorf("%s: %w", name, err)}
}

// Invoke runs op. Every failure is a domain error of the call (on_error
// fires).
func (w *Worktrees) Invoke(ctx context.Context, call *host.Call, op string) *host.Result {
	name := WorktreeName + "." + op
	if !slices.Contains(opNames, op) {
		return fail(WorktreeName, fmt.Errorf("with.op %q is not an operation (operations: %s)", op, strings.Join(opNames, ", ")))
	}
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err)
	}
	dir, err := repo(ctx, &w.cfg)
	if err != nil {
		return fail(name, err)
	}
	var data map[string]any
	switch op {
	case "list":
		data, err = w.list(ctx, dir)
	case "get":
		data, err = w.get(ctx, dir, call)
	case "create":
		data, err = w.create(ctx, dir, call)
	case "sync":
		data, err = w.sync(ctx, call)
	case "cleanup_scan":
		data, err = w.scan(ctx, dir, call)
	case "cleanup_apply":
		data, err = w.apply(ctx, dir, call)
	}
	if err != nil {
		r := fail(name, err)
		maps.Copy(r.Data, data)
		r.Data["ok"] = false
		return r
	}
	data["ok"] = true
	return &host.Result{Data: data}
}

// keepOut adds kitsoki's directories (.worktrees among them) to the
// repository's info/exclude, so the main checkout stays clean.
func (w *Worktrees) keepOut(ctx context.Context, repoDir string) {
	r, err := gitrepo.Open(ctx, Tool(w.cfg.Workspace, w.cfg.Logger), repoDir, w.cfg.Workspace.Dir())
	if err == nil {
		err = r.KeepRuntimeOut(ctx, hostfs.New(w.cfg.Workspace))
	}
	if err != nil {
		w.cfg.Logger.Warn("could not add kitsoki's directories to the repository's info/exclude", "error", err)
	}
}

// session is the call's session as an owner record names it.
func session(call *host.Call) string {
	if s := sanitize(call.SessionID); s != "" {
		return s
	}
	return "no-session"
}

// owner is the session that made worktree id ("" when no record says:
// made by hand, or by another tool).
type owner struct {
	Session string `json:"session"`
	Branch  string `json:"branch"`
}

func (w *Worktrees) ownerPath(id string) (string, error) {
	return hostfs.New(w.cfg.Workspace).Join(filepath.FromSlash(Owners), id+".json")
}

func (w *Worktrees) owner(id string) owner {
	var o owner
	p, err := w.ownerPath(id)
	if err != nil {
		return o
	}
	if b, err := hostfs.New(w.cfg.Workspace).ReadFile(p); err == nil {
		_ = json.Unmarshal(b, &o)
	}
	return o
}

func (w *Worktrees) setOwner(id string, o owner) error {
	p, err := w.ownerPath(id)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(o)
	return hostfs.New(w.cfg.Workspace).WriteFile(p, append(b, '\n'))
}

// mine refuses a worktree another session made.
func (w *Worktrees) mine(call *host.Call, id, dir string) error {
	if o := w.owner(id); o.Session != "" && o.Session != session(call) {
		return fmt.Errorf("worktree %q (%s) is checked out by session %s; refusing to share it with this one: use another with.id (e.g. one naming the session)", id, dir, o.Session)
	}
	return nil
}

// worktreeDir is where the worktree with.id of the call's session lives,
// checked to be inside the workspace.
func (w *Worktrees) worktreeDir(call *host.Call, id string) (string, string, error) {
	if err := noOption("id", id); err != nil {
		return "", "", err
	}
	clean := sanitize(strings.ReplaceAll(id, "/", "-"))
	if clean == "" {
		return "", "", fmt.Errorf("with.id %q has no usable name: use letters, digits, '.', '-' or '_'", id)
	}
	ws := w.cfg.Workspace
	real, err := ws.Resolve(ws.Dir(), filepath.Join(ws.Dir(), filepath.FromSlash(Root), clean))
	if err != nil {
		return "", "", fmt.Errorf("worktree directory %w", err)
	}
	return clean, real, nil
}

// existing returns the worktree with.id of the call's session, which must
// exist.
func (w *Worktrees) existing(call *host.Call) (string, string, error) {
	id, err := str(call.Args, "id")
	if err != nil {
		return "", "", err
	}
	if id == "" {
		return "", "", errors.New("with.id is required: the worktree's id (as create returned it)")
	}
	id, dir, err := w.worktreeDir(call, id)
	if err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("no worktree %q (%s): create it first with %s.create", id, dir, WorktreeName)
	}
	if err := w.mine(call, id, dir); err != nil {
		return "", "", err
	}
	return id, dir, nil
}

// branchOf is the branch checked out in dir ("" when detached).
func (w *Worktrees) branchOf(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, &w.cfg, dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) && ge.Code == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// dirty reports uncommitted changes (untracked files included) in dir.
func (w *Worktrees) dirty(ctx context.Context, dir string) (bool, error) {
	out, err := git(ctx, &w.cfg, dir, "status", "--porcelain")
	return strings.TrimSpace(out) != "", err
}

func (w *Worktrees) describe(ctx context.Context, id, dir string) (map[string]any, error) {
	branch, err := w.branchOf(ctx, dir)
	if err != nil {
		return nil, err
	}
	d, err := w.dirty(ctx, dir)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "path": dir, "branch": branch, "dirty": d}, nil
}

// get describes one worktree of the session.
func (w *Worktrees) get(ctx context.Context, _ string, call *host.Call) (map[string]any, error) {
	id, dir, err := w.existing(call)
	if err != nil {
		return nil, err
	}
	return w.describe(ctx, id, dir)
}

// create adds the worktree, or returns the one already there.
func (w *Worktrees) create(ctx context.Context, repoDir string, call *host.Call) (map[string]any, error) {
	name, err := str(call.Args, "name")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errors.New("with.name is required: the branch the worktree checks out")
	}
	if err := noOption("name", name); err != nil {
		return nil, err
	}
	if _, err := git(ctx, &w.cfg, repoDir, "check-ref-format", "--branch", name); err != nil {
		return nil, fmt.Errorf("with.name %q is not a valid branch name", name)
	}
	base, err := str(call.Args, "base")
	if err != nil {
		return nil, err
	}
	if err := noOption("base", base); err != nil {
		return nil, err
	}
	sess, err := str(call.Args, "session_id")
	if err != nil {
		return nil, err
	}
	if sess != "" && sess != call.SessionID {
		return nil, fmt.Errorf("with.session_id %q is not this run's session %q: a worktree belongs to the session that creates it", sess, call.SessionID)
	}
	id, err := str(call.Args, "id")
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = name
	}
	id, dir, err := w.worktreeDir(call, id)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s exists and is not a worktree directory", dir)
		}
		if err := w.mine(call, id, dir); err != nil {
			return nil, err
		}
		got, err := w.branchOf(ctx, dir)
		if err != nil {
			return nil, err
		}
		if got != name {
			return nil, fmt.Errorf("worktree %q (%s) already exists on branch %q, not %q: use another with.id", id, dir, got, name)
		}
		return map[string]any{"id": id, "path": dir, "branch": name, "created": false}, nil
	}
	args := []string{"worktree", "add"}
	if _, err := git(ctx, &w.cfg, repoDir, "rev-parse", "--verify", "--quiet", "refs/heads/"+name); err == nil {
		args = append(args, "--", dir, name) // the branch exists: check it out again
	} else {
		if base == "" {
			base = "HEAD"
		}
		args = append(args, "-b", name, "--", dir, base)
	}
	if _, err := git(ctx, &w.cfg, repoDir, args...); err != nil {
		return nil, err
	}
	if err := w.setOwner(id, owner{Session: session(call), Branch: name}); err != nil {
		return nil, fmt.Errorf("record the worktree's session: %w", err)
	}
	w.keepOut(ctx, repoDir)
	return map[string]any{"id": id, "path": dir, "branch": name, "created": true}, nil
}

// sync fast-forwards the worktree's branch to its upstream.
func (w *Worktrees) sync(ctx context.Context, call *host.Call) (map[string]any, error) {
	id, dir, err := w.existing(call)
	if err != nil {
		return nil, err
	}
	branch, err := w.branchOf(ctx, dir)
	if err != nil {
		return nil, err
	}
	data := map[string]any{"id": id, "path": dir}
	if _, err := git(ctx, &w.cfg, dir, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"); err != nil {
		var ge *gitError
		if !errors.As(err, &ge) {
			return data, err
		}
		data["log"] = fmt.Sprintf("%s has no upstream branch; nothing to sync", branch)
		return data, nil
	}
	out, err := git(ctx, &w.cfg, dir, "pull", "--ff-only", "--no-rebase")
	data["log"] = strings.TrimSpace(out)
	return data, err
}

// entry is one worktree of `git worktree list --porcelain`.
type entry struct {
	path, branch string
	bare         bool
}

func (w *Worktrees) entries(ctx context.Context, repoDir string) ([]entry, error) {
	out, err := git(ctx, &w.cfg, repoDir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var es []entry
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var e entry
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				e.path = v
			case "branch":
				e.branch = strings.TrimPrefix(v, "refs/heads/")
			case "bare":
				e.bare = true
			}
		}
		if e.path != "" {
			es = append(es, e)
		}
	}
	return es, nil
}

// list describes every worktree of the repository.
func (w *Worktrees) list(ctx context.Context, repoDir string) (map[string]any, error) {
	es, err := w.entries(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(w.cfg.Workspace.Dir(), filepath.FromSlash(Root))
	list := []any{}
	for _, e := range es {
		item := map[string]any{"id": filepath.Base(e.path), "path": e.path, "branch": e.branch, "dirty": false, "session": ""}
		if rel, err := filepath.Rel(root, e.path); err == nil && filepath.IsLocal(rel) {
			item["session"] = w.owner(filepath.Base(e.path)).Session
		}
		if fi, err := os.Stat(e.path); err == nil && fi.IsDir() && !e.bare {
			d, err := w.dirty(ctx, e.path)
			if err != nil {
				return nil, err
			}
			item["dirty"] = d
		}
		list = append(list, item)
	}
	return map[string]any{"workspaces": list}, nil
}

// scan proposes the worktrees kitsoki created (under Root, any session)
// for removal: recommended when the branch is merged into base, the tree
// is clean, and the branch is neither protected nor excluded.
func (w *Worktrees) scan(ctx context.Context, repoDir string, call *host.Call) (map[string]any, error) {
	base, err := str(call.Args, "base")
	if err != nil {
		return nil, err
	}
	exclude, err := str(call.Args, "exclude")
	if err != nil {
		return nil, err
	}
	protRaw, err := str(call.Args, "protected")
	if err != nil {
		return nil, err
	}
	if err := noOption("base", base); err != nil {
		return nil, err
	}
	if base == "" {
		if base, err = w.branchOf(ctx, repoDir); err != nil {
			return nil, err
		}
		if base == "" {
			return nil, errors.New("with.base is required when the workspace's checkout is detached: name the branch merged work lands on")
		}
	}
	if _, err := git(ctx, &w.cfg, repoDir, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		return nil, fmt.Errorf("with.base %q is not a branch or commit of the repository", base)
	}
	protected := map[string]bool{}
	for _, p := range strings.Split(protRaw, ",") {
		if p = strings.TrimSpace(p); p != "" {
			protected[p] = true
		}
	}
	es, err := w.entries(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(w.cfg.Workspace.Dir(), filepath.FromSlash(Root))
	cands := []any{}
	recommended := int64(0)
	for _, e := range es {
		rel, err := filepath.Rel(root, e.path)
		if err != nil || !filepath.IsLocal(rel) || e.bare || w.owner(filepath.Base(e.path)).Session == "" {
			continue // only the worktrees kitsoki made
		}
		c := map[string]any{"kind": "worktree", "id": filepath.Base(e.path), "path": e.path, "branch": e.branch, "base": base,
			"merged": false, "dirty": false, "recommended": false, "actions": []any{"worktree_remove", "branch_delete"}}
		if fi, err := os.Stat(e.path); err == nil && fi.IsDir() {
			d, err := w.dirty(ctx, e.path)
			if err != nil {
				return nil, err
			}
			c["dirty"] = d
		}
		merged := false
		if e.branch != "" {
			_, err := git(ctx, &w.cfg, repoDir, "merge-base", "--is-ancestor", "refs/heads/"+e.branch, base)
			merged = err == nil
		}
		c["merged"] = merged
		switch {
		case e.branch == "":
			c["reason"] = "the worktree is detached (no branch)"
		case protected[e.branch]:
			c["reason"] = "branch is protected"
		case exclude != "" && (strings.Contains(e.branch, exclude) || strings.Contains(e.path, exclude)):
			c["reason"] = fmt.Sprintf("matches the exclude filter %q", exclude)
		case c["dirty"] == true:
			c["reason"] = "the worktree has uncommitted changes"
		case !merged:
			c["reason"] = "branch is not merged into " + base
		default:
			c["reason"] = "branch is merged into " + base
			c["recommended"] = true
			recommended++
		}
		cands = append(cands, c)
	}
	return map[string]any{"base": base, "exclude": exclude, "candidates": cands, "recommended_count": recommended}, nil
}

// apply removes each recommended candidate's worktree and then its branch.
// git refuses a dirty worktree and an unmerged branch; those land in
// errors, as does a path outside Root.
func (w *Worktrees) apply(ctx context.Context, repoDir string, call *host.Call) (map[string]any, error) {
	raw, ok := call.Args["candidates"]
	if !ok || raw == nil {
		return nil, errors.New("with.candidates is required: the list cleanup_scan returned")
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("with.candidates must be a list (cleanup_scan's candidates), got %T", raw)
	}
	root := filepath.Join(w.cfg.Workspace.Dir(), filepath.FromSlash(Root))
	deleted, skipped, errs := []any{}, []any{}, []any{}
	for i, it := range list {
		c, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("with.candidates[%d] must be a mapping (a cleanup_scan candidate), got %T", i, it)
		}
		path, _ := c["path"].(string)
		branch, _ := c["branch"].(string)
		if rec, _ := c["recommended"].(bool); !rec {
			skipped = append(skipped, map[string]any{"branch": branch, "path": path, "reason": "not recommended"})
			continue
		}
		failed := func(err error) {
			errs = append(errs, map[string]any{"branch": branch, "path": path, "error": err.Error()})
		}
		rel, err := filepath.Rel(root, path)
		if path == "" || err != nil || !filepath.IsLocal(rel) || w.owner(filepath.Base(path)).Session == "" {
			failed(fmt.Errorf("%q is not a worktree kitsoki created (under %s): not removed", path, root))
			continue
		}
		if err := noOption("candidates.branch", branch); err != nil {
			failed(err)
			continue
		}
		if _, err := git(ctx, &w.cfg, repoDir, "worktree", "remove", "--", path); err != nil {
			failed(err)
			continue
		}
		if branch != "" {
			if _, err := git(ctx, &w.cfg, repoDir, "branch", "-d", "--", branch); err != nil {
				failed(err)
				continue
			}
		}
		if p, err := w.ownerPath(filepath.Base(path)); err == nil {
			_ = hostfs.New(w.cfg.Workspace).Remove(p)
		}
		deleted = append(deleted, map[string]any{"branch": branch, "path": path})
	}
	data := map[string]any{"deleted": deleted, "skipped": skipped, "errors": errs}
	if len(errs) > 0 {
		return data, fmt.Errorf("%d of %d recommended candidates were not removed (see errors)", len(errs), len(list)-len(skipped))
	}
	return data, nil
}
