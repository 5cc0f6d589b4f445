package forge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// Merge lands a pull request on its base: in the worktree that has the
// base checked out (which must be clean), else in a temporary worktree
// whose result moves the base branch; then pushes the base when it tracks
// a remote. A merged pull request is returned as it is.
func (l *Local) Merge(ctx context.Context, id, strategy string) (*PR, error) {
	defer l.lock()()
	pr, err := l.read(id)
	if err != nil {
		return nil, err
	}
	switch pr.State {
	case StateMerged:
		return l.fill(ctx, pr), nil
	case StateClosed:
		return nil, fmt.Errorf("pull request %s is closed: open a new one (iface.vcs.open_pr)", pr.ID)
	}
	if strategy == "" {
		strategy = "merge"
	}
	if !slices.Contains(strategies, strategy) {
		return nil, fmt.Errorf("with.strategy %q is not a merge strategy (strategies: %s)", strategy, strings.Join(strategies, ", "))
	}
	repo := l.env.Repo
	if !repo.HasBranch(ctx, pr.Head) {
		return nil, fmt.Errorf("pull request %s's branch %s no longer exists: it cannot be merged", pr.ID, pr.Head)
	}
	baseSHA, err := repo.SHA(ctx, "refs/heads/"+pr.Base)
	if err != nil {
		return nil, fmt.Errorf("pull request %s's base: %w", pr.ID, err)
	}
	sha, err := l.land(ctx, pr, strategy, baseSHA)
	if err != nil {
		return nil, err
	}
	pr.State, pr.MergedSHA, pr.BaseSHA, pr.Strategy, pr.Updated = StateMerged, sha, baseSHA, strategy, l.now()
	var perr error
	if remote, err := repo.Upstream(ctx, pr.Base); err == nil && remote != "" {
		if _, err := repo.Git(ctx, "push", remote, "refs/heads/"+pr.Base+":refs/heads/"+pr.Base); err != nil {
			perr = fmt.Errorf("pull request %s was merged locally as %s, but pushing %s to %s failed (%w): push it with git push %s %s",
				pr.ID, short(sha), pr.Base, remote, err, remote, pr.Base)
		} else {
			pr.Pushed = true
		}
	}
	if err := l.write(pr); err != nil {
		return nil, errors.Join(perr, err)
	}
	return l.fill(ctx, pr), perr
}

// land makes the merge commit(s) and moves the base branch; it returns the
// base's new commit.
func (l *Local) land(ctx context.Context, pr *PR, strategy, baseSHA string) (string, error) {
	repo := l.env.Repo
	wt, checkedOut, err := repo.CheckedOut(ctx, pr.Base)
	if err != nil {
		return "", err
	}
	if checkedOut {
		at, err := gitrepo.Open(ctx, l.env.Git, wt.Path, l.env.FS.Workspace().Dir())
		if err != nil {
			return "", err
		}
		if changes, err := at.Changes(ctx); err != nil {
			return "", err
		} else if len(changes) > 0 {
			return "", fmt.Errorf("the base branch %s is checked out at %s, which has uncommitted changes (%s): commit or stash them there, then merge again",
				pr.Base, wt.Path, summarize(changes))
		}
		return l.mergeIn(ctx, at, pr, strategy)
	}
	// The base is checked out nowhere: merge in a detached temporary
	// worktree, then move the branch (only if nobody moved it meanwhile).
	tmp, done, err := l.tempTree(ctx, baseSHA)
	if err != nil {
		return "", err
	}
	defer done()
	sha, err := l.mergeIn(ctx, tmp, pr, strategy)
	if err != nil {
		return "", err
	}
	if _, err := repo.Git(ctx, "update-ref", "-m", "kitsoki: merge pull request "+pr.ID, "refs/heads/"+pr.Base, sha, baseSHA); err != nil {
		return "", fmt.Errorf("move %s to the merge: %w", pr.Base, err)
	}
	return sha, nil
}

// tempTree adds a detached worktree at commit under .kitsoki/tmp and
// returns it with the function that removes it.
func (l *Local) tempTree(ctx context.Context, commit string) (*gitrepo.Repo, func(), error) {
	parent, err := l.env.FS.MkdirTemp(filepath.Join(l.env.FS.Workspace().Dir(), ".kitsoki", "tmp"), "merge-")
	if err != nil {
		return nil, nil, fmt.Errorf("temporary worktree: %w", err)
	}
	dir := filepath.Join(parent, "tree")
	repo := l.env.Repo
	remove := func() {
		// A cancelled run still removes its worktree.
		ctx := context.WithoutCancel(ctx)
		_, _ = repo.Git(ctx, "worktree", "remove", "--force", dir)
		_ = l.env.FS.RemoveAll(parent)
		_, _ = repo.Git(ctx, "worktree", "prune")
	}
	if _, err := repo.Git(ctx, "worktree", "add", "--detach", dir, commit); err != nil {
		remove()
		return nil, nil, err
	}
	at, err := gitrepo.Open(ctx, l.env.Git, dir, "")
	if err != nil {
		remove()
		return nil, nil, err
	}
	return at, remove, nil
}

// mergeIn merges the pull request into the tree at, which has the base (or
// its commit) checked out, and returns the new commit.
func (l *Local) mergeIn(ctx context.Context, at *gitrepo.Repo, pr *PR, strategy string) (string, error) {
	subject := fmt.Sprintf("Merge pull request #%s from %s", pr.ID, pr.Head)
	switch strategy {
	case "merge":
		if _, err := at.Git(ctx, "merge", "--no-ff", "--no-edit", "-m", subject, "-m", pr.Title, "refs/heads/"+pr.Head); err != nil {
			return "", l.conflict(ctx, at, pr, err, "merge", "--abort")
		}
	case "squash":
		if _, err := at.Git(ctx, "merge", "--squash", "refs/heads/"+pr.Head); err != nil {
			return "", l.conflict(ctx, at, pr, err, "reset", "--merge")
		}
		if staged, _ := at.Line(ctx, "diff", "--cached", "--name-only"); staged == "" {
			return "", fmt.Errorf("pull request %s changes nothing on %s (its changes are there already): close it instead", pr.ID, pr.Base)
		}
		msg := []string{"commit", "-m", fmt.Sprintf("%s (#%s)", pr.Title, pr.ID)}
		if strings.TrimSpace(pr.Body) != "" {
			msg = append(msg, "-m", pr.Body)
		}
		if _, err := at.Git(ctx, msg...); err != nil {
			return "", CommitError(err)
		}
	case "rebase":
		tip, err := l.rebased(ctx, pr)
		if err != nil {
			return "", err
		}
		if _, err := at.Git(ctx, "merge", "--ff-only", tip); err != nil {
			return "", fmt.Errorf("fast-forward %s to the rebased commits: %w", pr.Base, err)
		}
	}
	return at.Line(ctx, "rev-parse", "HEAD")
}

// rebased replays the pull request's commits onto its base in a temporary
// worktree and returns the new tip (the head branch itself is not moved).
func (l *Local) rebased(ctx context.Context, pr *PR) (string, error) {
	head, err := l.env.Repo.SHA(ctx, "refs/heads/"+pr.Head)
	if err != nil {
		return "", err
	}
	tmp, done, err := l.tempTree(ctx, head)
	if err != nil {
		return "", err
	}
	defer done()
	if _, err := tmp.Git(ctx, "rebase", "refs/heads/"+pr.Base); err != nil {
		return "", l.conflict(ctx, tmp, pr, err, "rebase", "--abort")
	}
	return tmp.Line(ctx, "rev-parse", "HEAD")
}

// conflict undoes a failed merge and says which files conflict.
func (l *Local) conflict(ctx context.Context, at *gitrepo.Repo, pr *PR, err error, undo ...string) error {
	files, _ := at.Line(ctx, "diff", "--name-only", "--diff-filter=U")
	_, _ = at.Git(ctx, undo...)
	if files != "" {
		return fmt.Errorf("pull request %s does not merge cleanly into %s: these files conflict: %s; merge %s into %s on the branch, resolve them, commit, and merge again",
			pr.ID, pr.Base, strings.Join(strings.Fields(files), ", "), pr.Base, pr.Head)
	}
	return CommitError(err)
}

// CommitError names the fix of git's refusal to commit without an author.
func CommitError(err error) error {
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) && strings.Contains(ee.Message(), "tell me who you are") {
		return errors.New("git has no author identity to commit with: set one with git config user.name \"Your Name\" and git config user.email you@example.com")
	}
	return err
}

// summarize shows the first few lines of a change list.
func summarize(lines []string) string {
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if len(lines) > 5 {
		return strings.Join(lines[:5], "; ") + fmt.Sprintf("; and %d more", len(lines)-5)
	}
	return strings.Join(lines, "; ")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
