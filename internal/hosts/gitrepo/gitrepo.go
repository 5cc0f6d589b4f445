// Package gitrepo is a git work tree as the git-backed handlers read it:
// the branch checked out, commits, the tree's changes, worktrees, config.
// Every git command runs through cmdrun (the process supervisor, argv only,
// no shell), with credential prompts and the pager off.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
)

// Git is the program run (looked up in PATH).
const Git = "git"

// Tool is git as the handlers run it in the workspace ws: no credential
// prompt (a git command waiting on a terminal prompt would stall the
// run), no pager, the fix named when git is missing, and every directory
// it runs in opened through the workspace root (cmdrun.Tool.Root).
func Tool(ws workspace.Root, logger *slog.Logger) cmdrun.Tool {
	return cmdrun.Tool{Program: Git, Env: []string{"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat"}, Logger: logger,
		Missing: "install git, or remove the call", Root: ws}
}

// RuntimeDirs are the directories kitsoki writes in a workspace (relative
// to it) that are never part of a change: a commit of every change leaves
// them out and a clean-tree check does not count them.
var runtimeDirs = []string{".kitsoki/artifacts", ".kitsoki/sessions", ".kitsoki/forge", ".kitsoki/worktrees", ".kitsoki/tmp", ".worktrees"}

// RuntimeDirs returns the directories kitsoki writes in a workspace,
// relative to it.
func RuntimeDirs() []string { return slices.Clone(runtimeDirs) }

// Repo is a git work tree: Dir is the directory commands run in (inside
// the tree), Top its top level.
type Repo struct {
	Dir, Top string
	tool     cmdrun.Tool
	// runtime are the workspace's runtime directories relative to Top
	// (slash-separated), left out of changes.
	runtime []string
}

// NotRepoError is a directory that is not inside a git work tree.
type NotRepoError struct {
	Dir, Detail string
}

func (e *NotRepoError) Error() string {
	return fmt.Sprintf("%s is not inside a git work tree (%s): run it in a git repository (git init), or name a directory inside one", e.Dir, e.Detail)
}

// Open returns the work tree dir lies in. workspace is the directory whose
// runtime directories (RuntimeDirs) are left out of changes.
func Open(ctx context.Context, tool cmdrun.Tool, dir, workspace string) (*Repo, error) {
	out, err := tool.Run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		var ee *cmdrun.ExitError
		if errors.As(err, &ee) {
			return nil, &NotRepoError{Dir: dir, Detail: ee.Message()}
		}
		return nil, err
	}
	r := &Repo{Dir: dir, Top: strings.TrimSpace(out.Stdout), tool: tool}
	if top, err := filepath.EvalSymlinks(r.Top); err == nil {
		r.Top = top
	}
	if rel, err := filepath.Rel(r.Top, workspace); workspace != "" && err == nil && (rel == "." || filepath.IsLocal(rel)) {
		for _, d := range runtimeDirs {
			r.runtime = append(r.runtime, filepath.ToSlash(filepath.Join(rel, d)))
		}
	}
	return r, nil
}

// Git runs git with args in the tree and returns its stdout.
func (r *Repo) Git(ctx context.Context, args ...string) (string, error) {
	out, err := r.tool.Run(ctx, r.Dir, args...)
	return out.Stdout, err
}

// Line runs git and returns its stdout trimmed.
func (r *Repo) Line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Git(ctx, args...)
	return strings.TrimSpace(out), err
}

// Branch is the branch checked out ("" when HEAD is detached).
func (r *Repo) Branch(ctx context.Context) (string, error) {
	out, err := r.Line(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) && ee.Code == 1 {
		return "", nil
	}
	return out, err
}

// SHA is the commit rev names; an unknown rev is an error saying so.
func (r *Repo) SHA(ctx context.Context, rev string) (string, error) {
	out, err := r.Line(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) {
		return "", fmt.Errorf("%q is not a branch, tag or commit of the repository at %s", rev, r.Top)
	}
	return out, err
}

// HasBranch reports whether the local branch name exists.
func (r *Repo) HasBranch(ctx context.Context, name string) bool {
	_, err := r.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	return err == nil
}

// ValidBranch refuses a name git would not take as a branch.
func (r *Repo) ValidBranch(ctx context.Context, key, name string) error {
	if err := cmdrun.NoOption(Git, key, name); err != nil {
		return err
	}
	if _, err := r.Git(ctx, "check-ref-format", "--branch", name); err != nil {
		return fmt.Errorf("with.%s %q is not a valid branch name (git check-ref-format): use letters, digits, '/', '-', '_' or '.'", key, name)
	}
	return nil
}

// Changes lists the tree's uncommitted changes, untracked files included,
// as `git status --porcelain` lines, leaving out kitsoki's runtime
// directories.
func (r *Repo) Changes(ctx context.Context) ([]string, error) {
	out, err := r.Git(ctx, append([]string{"status", "--porcelain", "--untracked-files=all", "--"}, r.Pathspec()...)...)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// Pathspec is "the whole tree but kitsoki's runtime directories", for git
// commands that take pathspecs.
func (r *Repo) Pathspec() []string {
	spec := []string{":/"}
	for _, d := range r.runtime {
		spec = append(spec, ":(top,exclude)"+d)
	}
	return spec
}

// ExcludeFile is where the repository's own ignore patterns live (not
// committed): <common git dir>/info/exclude, absolute.
func (r *Repo) ExcludeFile(ctx context.Context) (string, error) {
	dir, err := r.Line(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "info", "exclude"), nil
}

// ExcludeLines returns the info/exclude patterns that keep the workspace's
// runtime directories out of git status: "/<dir>/" relative to the top.
func (r *Repo) ExcludeLines() []string {
	var out []string
	for _, d := range r.runtime {
		out = append(out, "/"+strings.TrimPrefix(d, "./")+"/")
	}
	return out
}

// KeepRuntimeOut adds the workspace's runtime directories to the
// repository's info/exclude when they are not there yet, so git status in
// the main checkout stays clean while kitsoki keeps its files there. The
// exclude file is written through fsys, so one outside the workspace is
// left alone.
func (r *Repo) KeepRuntimeOut(ctx context.Context, fsys hostfs.FS) error {
	want := r.ExcludeLines()
	if len(want) == 0 {
		return nil
	}
	path, err := r.ExcludeFile(ctx)
	if err != nil {
		return err
	}
	if _, err := fsys.Resolve(path); err != nil {
		return nil // the git directory is outside the workspace: not ours to write
	}
	old, err := fsys.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range want {
		if !have[l] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return nil
	}
	text := string(old)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# kitsoki's runtime files (added by kitsoki)\n" + strings.Join(add, "\n") + "\n"
	return fsys.WriteFile(path, []byte(text))
}

// Config reads a git config value; ok is false when it is not set.
func (r *Repo) Config(ctx context.Context, key string) (string, bool, error) {
	out, err := r.Line(ctx, "config", "--get", key)
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) && ee.Code == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return out, true, nil
}

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Path, Branch, Head string
	Bare               bool
}

// Worktrees lists the repository's worktrees.
func (r *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	out, err := r.Git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var ws []Worktree
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var w Worktree
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				w.Path = v
			case "HEAD":
				w.Head = v
			case "branch":
				w.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "bare":
				w.Bare = true
			}
		}
		if w.Path != "" {
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// CheckedOut returns the worktree that has branch checked out.
func (r *Repo) CheckedOut(ctx context.Context, branch string) (Worktree, bool, error) {
	ws, err := r.Worktrees(ctx)
	if err != nil {
		return Worktree{}, false, err
	}
	for _, w := range ws {
		if w.Branch == branch && !w.Bare {
			return w, true, nil
		}
	}
	return Worktree{}, false, nil
}

// Upstream returns the remote a branch tracks (branch.<b>.remote), "" when
// none.
func (r *Repo) Upstream(ctx context.Context, branch string) (string, error) {
	v, _, err := r.Config(ctx, "branch."+branch+".remote")
	return v, err
}

// RemoteURL returns the URL of remote; a remote the repository does not
// have is an error naming the fix.
func (r *Repo) RemoteURL(ctx context.Context, remote string) (string, error) {
	out, err := r.Line(ctx, "remote", "get-url", remote)
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) {
		names, _ := r.Line(ctx, "remote")
		have := "it has none"
		if names != "" {
			have = "its remotes: " + strings.Join(strings.Fields(names), ", ")
		}
		return "", fmt.Errorf("the repository has no remote %q (%s): add one with git remote add %s URL, or name another with with.remote", remote, have, remote)
	}
	return out, err
}

// DefaultBranch guesses the branch changes land on: the remote's HEAD
// (origin/HEAD), else main, else master; "" when none exists.
func (r *Repo) DefaultBranch(ctx context.Context) string {
	if out, err := r.Line(ctx, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil && out != "" {
		if _, b, ok := strings.Cut(out, "/"); ok && r.HasBranch(ctx, b) {
			return b
		}
	}
	for _, b := range []string{"main", "master"} {
		if r.HasBranch(ctx, b) {
			return b
		}
	}
	return ""
}

// Files splits `git diff --name-only` style output into paths.
func Files(out string) []any {
	files := []any{}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			files = append(files, l)
		}
	}
	return files
}
