package vcs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/forge"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// maxDiff is how much of a diff a call returns: 1 MiB.
const maxDiff = 1 << 20

// branch creates with.name from with.base and checks it out, or checks out
// the branch there is.
func (c *call) branch(ctx context.Context) (map[string]any, error) {
	repo, err := c.workdir(ctx)
	if err != nil {
		return nil, err
	}
	name, err := c.str("name")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errors.New("with.name is required: the branch to create or check out")
	}
	if err := repo.ValidBranch(ctx, "name", name); err != nil {
		return nil, err
	}
	base, err := c.str("base")
	if err != nil {
		return nil, err
	}
	if err := cmdrun.NoOption(gitrepo.Git, "base", base); err != nil {
		return nil, err
	}
	data := map[string]any{"branch": name, "created": false}
	cur, err := repo.Branch(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case cur == name:
	case repo.HasBranch(ctx, name):
		if _, err := repo.Git(ctx, "switch", name); err != nil {
			return data, switchError(repo, name, err)
		}
	default:
		if base == "" {
			base = "HEAD"
		}
		if _, err := repo.SHA(ctx, base); err != nil {
			return data, fmt.Errorf("with.base: %w", err)
		}
		if _, err := repo.Git(ctx, "switch", "--no-track", "-c", name, base); err != nil {
			return data, switchError(repo, name, err)
		}
		data["created"] = true
	}
	data["sha"], err = repo.Line(ctx, "rev-parse", "HEAD")
	return data, err
}

// switchError names the fix of a checkout that local changes block.
func switchError(repo *gitrepo.Repo, name string, err error) error {
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) && strings.Contains(ee.Message(), "would be overwritten") {
		return fmt.Errorf("cannot check out %s in %s: its uncommitted changes would be overwritten (%s): commit them (iface.vcs.commit) or stash them first",
			name, repo.Top, firstLine(ee.Message()))
	}
	return err
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// diff is the work tree's change against its base (the committed and the
// uncommitted part), or with.pr_id's change.
func (c *call) diff(ctx context.Context) (map[string]any, error) {
	if id, err := c.str("pr_id"); err != nil {
		return nil, err
	} else if id != "" {
		f, err := c.forge(ctx)
		if err != nil {
			return nil, err
		}
		text, files, err := f.Diff(ctx, id)
		if err != nil {
			return nil, err
		}
		return diffData(text, files, ""), nil
	}
	repo, err := c.workdir(ctx)
	if err != nil {
		return nil, err
	}
	base, err := c.diffBase(ctx, repo)
	if err != nil {
		return nil, err
	}
	from := "HEAD"
	if base != "" {
		if from, err = repo.Line(ctx, "merge-base", base, "HEAD"); err != nil {
			return nil, fmt.Errorf("the branch has no common history with %s: %w", base, err)
		}
	}
	spec := append([]string{"--"}, repo.Pathspec()...)
	text, err := repo.Git(ctx, append([]string{"diff", "--no-color", from}, spec...)...)
	if err != nil {
		return nil, err
	}
	names, err := repo.Git(ctx, append([]string{"diff", "--name-only", from}, spec...)...)
	if err != nil {
		return nil, err
	}
	files := gitrepo.Files(names)
	newText, newFiles, err := untracked(ctx, repo, spec)
	if err != nil {
		return nil, err
	}
	return diffData(text+newText, append(files, newFiles...), base), nil
}

// untracked is the diff of the work tree's new files (not ignored, not yet
// added): each shown as created, as a commit of every change would record
// it.
func untracked(ctx context.Context, repo *gitrepo.Repo, spec []string) (string, []any, error) {
	out, err := repo.Git(ctx, append([]string{"ls-files", "--others", "--exclude-standard", "--full-name"}, spec...)...)
	if err != nil {
		return "", nil, err
	}
	var text strings.Builder
	files := gitrepo.Files(out)
	for _, f := range files {
		rel := f.(string)
		d, err := repo.Git(ctx, "-C", repo.Top, "diff", "--no-color", "--no-index", "--", "/dev/null", rel)
		var ee *cmdrun.ExitError
		if errors.As(err, &ee) && ee.Code == 1 {
			d, err = ee.Stdout, nil // --no-index exits 1 when the files differ
		}
		if err != nil {
			return "", nil, err
		}
		text.WriteString(d)
		if text.Len() > maxDiff {
			break
		}
	}
	return text.String(), files, nil
}

func diffData(text string, files []any, base string) map[string]any {
	cut := len(text) > maxDiff
	if cut {
		text = text[:maxDiff]
	}
	return map[string]any{"diff": text, "files": files, "base": base, "truncated": cut}
}

// diffBase is what the branch's change is measured against: with.base, else
// the base of its open pull request, else main or master; "" (only the
// uncommitted change) when the work tree is on that branch or none exists.
func (c *call) diffBase(ctx context.Context, repo *gitrepo.Repo) (string, error) {
	base, err := c.str("base")
	if err != nil {
		return "", err
	}
	if err := cmdrun.NoOption(gitrepo.Git, "base", base); err != nil {
		return "", err
	}
	if base != "" {
		if _, err := repo.SHA(ctx, base); err != nil {
			return "", fmt.Errorf("with.base: %w", err)
		}
		return base, nil
	}
	cur, err := repo.Branch(ctx)
	if err != nil {
		return "", err
	}
	if cur != "" {
		if f, err := c.forge(ctx); err == nil && f.Kind() == forge.KindLocal {
			if prs, err := f.List(ctx); err == nil {
				for _, pr := range prs {
					if pr.Head == cur {
						return pr.Base, nil
					}
				}
			}
		}
	}
	if def := repo.DefaultBranch(ctx); def != "" && def != cur {
		return def, nil
	}
	return "", nil
}

// commit commits with.files, every change (with.stage_all) or the tracked
// changes; nothing to commit is not an error (committed false, sha HEAD).
func (c *call) commit(ctx context.Context) (map[string]any, error) {
	repo, err := c.workdir(ctx)
	if err != nil {
		return nil, err
	}
	msg, err := c.text("message")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(msg) == "" {
		return nil, errors.New("with.message is required: the commit message (e.g. message: \"Fix the login timeout\")")
	}
	files, err := c.list("files")
	if err != nil {
		return nil, err
	}
	all, err := c.flag("stage_all")
	if err != nil {
		return nil, err
	}
	paths, err := c.commitPaths(repo, files)
	if err != nil {
		return nil, err
	}
	args := []string{"commit", "-m", msg}
	switch {
	case all:
		if _, err := repo.Git(ctx, append([]string{"add", "-A", "--"}, repo.Pathspec()...)...); err != nil {
			return nil, err
		}
	case len(paths) > 0:
		if _, err := repo.Git(ctx, append([]string{"add", "-A", "--"}, paths...)...); err != nil {
			return nil, err
		}
		args = append(append(args, "--"), paths...)
	default:
		args = append(args, "--all")
	}
	branch, _ := repo.Branch(ctx)
	data := map[string]any{"branch": branch, "committed": false, "files": []any{}}
	if all || len(paths) > 0 {
		diffArgs := append([]string{"diff", "--cached", "--quiet", "--"}, paths...)
		if _, err := repo.Git(ctx, diffArgs...); err == nil {
			data["sha"], _ = repo.Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD")
			return data, nil // nothing staged: nothing to commit
		}
	}
	if _, err := repo.Git(ctx, args...); err != nil {
		var ee *cmdrun.ExitError
		if errors.As(err, &ee) && nothingToCommit(ee.Stdout) {
			data["sha"], _ = repo.Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD")
			return data, nil
		}
		return data, forge.CommitError(err)
	}
	sha, err := repo.Line(ctx, "rev-parse", "HEAD")
	if err != nil {
		return data, err
	}
	changed, _ := repo.Git(ctx, "diff-tree", "--root", "--no-commit-id", "--name-only", "-r", sha)
	data["sha"], data["committed"], data["files"] = sha, true, gitrepo.Files(changed)
	return data, nil
}

// nothingToCommit reports git commit's refusal for want of changes.
func nothingToCommit(out string) bool {
	for _, s := range []string{"nothing to commit", "no changes added to commit", "nothing added to commit"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// commitPaths checks with.files: each inside the workspace and not an
// option, relative to the work tree as git takes them.
func (c *call) commitPaths(repo *gitrepo.Repo, files []string) ([]string, error) {
	ws := c.fs.Workspace()
	var out []string
	for i, f := range files {
		if strings.TrimSpace(f) == "" {
			continue
		}
		key := fmt.Sprintf("files[%d]", i)
		if err := cmdrun.NoOption(gitrepo.Git, key, f); err != nil {
			return nil, err
		}
		real, err := ws.Resolve(repo.Dir, f)
		if err != nil {
			return nil, fmt.Errorf("with.%s %w", key, err)
		}
		rel, err := filepath.Rel(repo.Dir, real)
		if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
			rel = real // inside the workspace but outside the work tree: git says whether it is the repository's
		}
		out = append(out, rel)
	}
	return out, nil
}

// push pushes the work tree's branch to with.remote and sets it as the
// branch's upstream.
func (c *call) push(ctx context.Context) (map[string]any, error) {
	repo, err := c.workdir(ctx)
	if err != nil {
		return nil, err
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		return nil, fmt.Errorf("HEAD is detached in %s: check out a branch (iface.vcs.branch) before pushing", repo.Top)
	}
	remote, err := c.str("remote")
	if err != nil {
		return nil, err
	}
	if remote == "" {
		if remote, err = repo.Upstream(ctx, branch); err != nil {
			return nil, err
		}
		if remote == "" {
			remote = "origin"
		}
	}
	if err := cmdrun.NoOption(gitrepo.Git, "remote", remote); err != nil {
		return nil, err
	}
	url, err := repo.RemoteURL(ctx, remote)
	if err != nil {
		return nil, err
	}
	data := map[string]any{"remote": remote, "url": url, "branch": branch}
	ref := "refs/heads/" + branch
	if _, err := repo.Git(ctx, "push", "--set-upstream", remote, ref+":"+ref); err != nil {
		var ee *cmdrun.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Message(), "rejected") {
			return data, fmt.Errorf("%s rejected the push of %s (%s): fetch and merge %s/%s into the branch first, then push again",
				remote, branch, firstLine(ee.Message()), remote, branch)
		}
		return data, err
	}
	data["sha"], err = repo.Line(ctx, "rev-parse", "HEAD")
	return data, err
}
