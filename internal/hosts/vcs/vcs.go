// Package vcs is the vcs interface's providers: host.git (branch, diff,
// commit and push on the git CLI; pull requests on the forge the
// repository's git config kitsoki.forge picks, the local forge by default)
// and host.github (the same, pull requests always on GitHub through gh).
// Each operation is a handler of its own, <name>.<op> (what
// iface.vcs.<op> resolves to), and <name> with with.op takes any of them.
package vcs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/forge"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Names of the handlers.
const (
	Name       = "host.git"
	GitHubName = "host.github"
)

// Config is what the handlers need of the run.
type Config struct {
	// Workspace is the directory the handlers act in; every work tree and
	// file they touch lies inside it.
	Workspace workspace.Root
	// Clock stamps the local forge's records; nil is the system clock.
	Clock clock.Clock
	// Logger receives the supervisor's warnings; nil discards them.
	Logger *slog.Logger
	// GH is the GitHub CLI program (default "gh", looked up in PATH).
	GH string
	// Lock serialises the local forge within the run; the runtime shares
	// one with the ci handlers. Nil makes one.
	Lock *sync.Mutex
}

// Handler is host.git or host.github for one run.
type Handler struct {
	cfg   Config
	name  string
	forge string // "" (the setting) or forge.KindGitHub
}

// New returns the handler named name (Name or GitHubName).
func New(cfg Config, name string) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Lock == nil {
		cfg.Lock = &sync.Mutex{}
	}
	hd := &Handler{cfg: cfg, name: name}
	if name == GitHubName {
		hd.forge = forge.KindGitHub
	}
	return hd
}

// Register installs host.git and host.github, each as <name> (with.op) and
// <name>.<op>.
func Register(h *host.Host, cfg Config) {
	if cfg.Lock == nil {
		cfg.Lock = &sync.Mutex{}
	}
	for _, name := range catalog.VCSNames() {
		hd := New(cfg, name)
		h.Register(name, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			op, _ := call.Args["op"].(string)
			if op == "" {
				return fail(name, fmt.Errorf("with.op is required: one of %s (or invoke %s.<op>)", strings.Join(catalog.VCSOps(), ", "), name), nil), nil
			}
			return hd.Invoke(ctx, call, op), nil
		}))
		for _, op := range catalog.VCSOps() {
			h.Register(name+"."+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
				return hd.Invoke(ctx, call, op), nil
			}))
		}
	}
}

func fail(name string, err error, data map[string]any) *host.Result {
	d := map[string]any{}
	maps.Copy(d, data)
	d["ok"] = false
	return &host.Result{Data: d, Err: fmt.Errorf("%s: %w", name, err)}
}

// call is one operation being answered.
type call struct {
	hd   *Handler
	args map[string]any
	fs   hostfs.FS
	git  cmdrun.Tool
	ws   *gitrepo.Repo // the workspace's work tree
}

// Invoke runs op. Every failure is a domain error of the call (ok false,
// on_error fires), naming the handler and op.
func (hd *Handler) Invoke(ctx context.Context, hc *host.Call, op string) *host.Result {
	name := hd.name + "." + op
	if !slices.Contains(catalog.VCSOps(), op) {
		return fail(hd.name, fmt.Errorf("with.op %q is not an operation (operations: %s)", op, strings.Join(catalog.VCSOps(), ", ")), nil)
	}
	if err := catalog.CheckArgs(name, hc.Args); err != nil {
		return fail(name, err, nil)
	}
	c, err := hd.begin(ctx, hc.Args)
	if err != nil {
		return fail(name, err, nil)
	}
	var data map[string]any
	switch op {
	case "branch":
		data, err = c.branch(ctx)
	case "diff":
		data, err = c.diff(ctx)
	case "commit":
		data, err = c.commit(ctx)
	case "push":
		data, err = c.push(ctx)
	case "open_pr":
		data, err = c.openPR(ctx)
	case "pr_status":
		data, err = c.prStatus(ctx)
	case "pr_comment":
		data, err = c.prComment(ctx)
	case "merge":
		data, err = c.merge(ctx)
	}
	if err != nil {
		return fail(name, err, data)
	}
	data["ok"] = true
	return &host.Result{Data: data}
}

// begin checks that git is there and the workspace is a git work tree.
func (hd *Handler) begin(ctx context.Context, args map[string]any) (*call, error) {
	ws := hd.cfg.Workspace
	if ws.IsZero() {
		return nil, errors.New("no workspace is set for this run, so there is no git repository to work in")
	}
	if fsys, _ := ws.FS(); fsys != nil {
		return nil, fmt.Errorf("the workspace %s is read from memory (an fs.FS), so git cannot work in it", ws.Dir())
	}
	c := &call{hd: hd, args: args, fs: hostfs.New(ws), git: gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger)}
	repo, err := gitrepo.Open(ctx, c.git, ws.Dir(), ws.Dir())
	if err != nil {
		var nr *gitrepo.NotRepoError
		if errors.As(err, &nr) {
			return nil, fmt.Errorf("the workspace %s is not inside a git work tree (%s): run kitsoki on a story in a git repository, or pass --workspace with a directory inside one", ws.Dir(), nr.Detail)
		}
		return nil, err
	}
	c.ws = repo
	if err := repo.KeepRuntimeOut(ctx, c.fs); err != nil {
		hd.cfg.Logger.Warn("could not add kitsoki's directories to the repository's info/exclude", "error", err)
	}
	return c, nil
}

// forge is the forge the call's pull requests live on.
func (c *call) forge(ctx context.Context) (forge.Forge, error) {
	env := forge.Env{FS: c.fs, Clock: c.hd.cfg.Clock, Logger: c.hd.cfg.Logger, Repo: c.ws, Git: c.git, Lock: c.hd.cfg.Lock}
	if c.hd.cfg.GH != "" {
		env.GH = cmdrun.Tool{Program: c.hd.cfg.GH, Logger: c.hd.cfg.Logger, Root: c.hd.cfg.Workspace}
	}
	return forge.Choose(ctx, env, c.hd.forge)
}

// workdir is the work tree with.workdir names (default the workspace
// directory): inside the workspace, a directory, inside a git work tree.
func (c *call) workdir(ctx context.Context) (*gitrepo.Repo, error) {
	name, err := c.str("workdir")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return c.ws, nil
	}
	dir, err := c.fs.Resolve(name)
	if err != nil {
		return nil, fmt.Errorf("with.workdir %w", err)
	}
	fi, err := c.fs.Stat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("with.workdir %q does not exist (%s): create the work tree first (iface.workspace.create), or name an existing directory", name, dir)
	case !fi.IsDir():
		return nil, fmt.Errorf("with.workdir %q is not a directory", name)
	}
	repo, err := gitrepo.Open(ctx, c.git, dir, c.fs.Workspace().Dir())
	if err != nil {
		return nil, fmt.Errorf("with.workdir: %w", err)
	}
	return repo, nil
}

// str reads with.<key> as a string; absent or null is "".
func (c *call) str(key string) (string, error) {
	v, ok := c.args[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", key, v)
	}
	return strings.TrimSpace(s), nil
}

// text reads with.<key> as a string kept as written (a message, a body).
func (c *call) text(key string) (string, error) {
	v, ok := c.args[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", key, v)
	}
	return s, nil
}

// flag reads with.<key> as a boolean; absent, null or "" is false, and
// "true"/"false" (a template's rendering) are read as such.
func (c *call) flag(key string) (bool, error) {
	switch v := c.args[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "", "false", "no", "0":
			return false, nil
		case "true", "yes", "1":
			return true, nil
		}
	}
	return false, fmt.Errorf("with.%s must be true or false, got %v", key, c.args[key])
}

// list reads with.<key> as a list of strings (a string is one item).
func (c *call) list(key string) ([]string, error) {
	switch v := c.args[key].(type) {
	case nil:
		return nil, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, nil
		}
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("with.%s[%d] must be a path string, got %T", key, i, x)
			}
			out = append(out, s)
		}
		return out, nil
	case []string:
		return v, nil
	}
	return nil, fmt.Errorf("with.%s must be a list of paths, got %T", key, c.args[key])
}
