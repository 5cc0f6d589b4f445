package vcs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/forge"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// openPR opens a pull request of the work tree's branch into with.base.
func (c *call) openPR(ctx context.Context) (map[string]any, error) {
	repo, err := c.workdir(ctx)
	if err != nil {
		return nil, err
	}
	head, err := repo.Branch(ctx)
	if err != nil {
		return nil, err
	}
	if head == "" {
		return nil, fmt.Errorf("HEAD is detached in %s: check out the branch to propose (iface.vcs.branch) first", repo.Top)
	}
	base, err := c.str("base")
	if err != nil {
		return nil, err
	}
	if err := cmdrun.NoOption(gitrepo.Git, "base", base); err != nil {
		return nil, err
	}
	if base == "" {
		if base = repo.DefaultBranch(ctx); base == "" {
			return nil, errors.New("with.base is required: the branch the pull request merges into (the repository has no main or master)")
		}
	}
	if head == base {
		return nil, fmt.Errorf("the work tree %s is on %s itself: open the pull request from a feature branch (iface.vcs.branch)", repo.Top, base)
	}
	if changes, err := repo.Changes(ctx); err != nil {
		return nil, err
	} else if len(changes) > 0 {
		return nil, fmt.Errorf("the work tree %s has uncommitted changes the pull request would not contain (%s): commit them (iface.vcs.commit) or stash them, then open the pull request",
			repo.Top, summarize(changes))
	}
	title, err := c.text("title")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(title) == "" {
		title, _ = repo.Line(ctx, "log", "-1", "--format=%s", "refs/heads/"+head)
	}
	body, err := c.text("body")
	if err != nil {
		return nil, err
	}
	draft, err := c.flag("draft")
	if err != nil {
		return nil, err
	}
	f, err := c.forge(ctx)
	if err != nil {
		return nil, err
	}
	pr, created, err := f.Open(ctx, repo, forge.OpenRequest{Title: strings.TrimSpace(title), Body: body, Base: base, Head: head, Draft: draft})
	if err != nil {
		return nil, err
	}
	data := pr.Data()
	data["created"] = created
	return data, nil
}

func summarize(lines []string) string {
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if len(lines) > 5 {
		return strings.Join(lines[:5], "; ") + fmt.Sprintf("; and %d more", len(lines)-5)
	}
	return strings.Join(lines, "; ")
}

// prID reads the required with.pr_id.
func (c *call) prID() (string, error) {
	id, err := c.str("pr_id")
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errors.New("with.pr_id is required: the pull request (bind pr_id from iface.vcs.open_pr)")
	}
	return id, nil
}

// prStatus reads a pull request, or with pr_id "*" the open ones.
func (c *call) prStatus(ctx context.Context) (map[string]any, error) {
	id, err := c.prID()
	if err != nil {
		return nil, err
	}
	f, err := c.forge(ctx)
	if err != nil {
		return nil, err
	}
	if id == "*" {
		prs, err := f.List(ctx)
		if err != nil {
			return nil, err
		}
		list := []any{}
		var lines []string
		for _, pr := range prs {
			list = append(list, pr.Data())
			lines = append(lines, fmt.Sprintf("#%s %s (%s → %s, checks %s)", pr.ID, pr.Title, pr.Head, pr.Base, forge.Rollup(pr.Checks)))
		}
		return map[string]any{"prs": list, "comments": strings.Join(lines, "\n"), "count": int64(len(list)), "state": ""}, nil
	}
	pr, err := f.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return pr.Data(), nil
}

// prComment comments on a pull request or reviews it.
func (c *call) prComment(ctx context.Context) (map[string]any, error) {
	id, err := c.prID()
	if err != nil {
		return nil, err
	}
	body, err := c.text("body")
	if err != nil {
		return nil, err
	}
	approve, err := c.flag("approve")
	if err != nil {
		return nil, err
	}
	changes, err := c.flag("request_changes")
	if err != nil {
		return nil, err
	}
	verdict := forge.VerdictComment
	switch {
	case approve && changes:
		return nil, errors.New("with.approve and with.request_changes are both set: a review does one or the other")
	case approve:
		verdict = forge.VerdictApprove
	case changes:
		verdict = forge.VerdictRequestChanges
	}
	if strings.TrimSpace(body) == "" && verdict != forge.VerdictApprove {
		return nil, errors.New("with.body is required: the comment's text (only an approving review may have none)")
	}
	f, err := c.forge(ctx)
	if err != nil {
		return nil, err
	}
	cm, pr, err := f.Comment(ctx, id, body, verdict)
	if err != nil {
		return nil, err
	}
	return map[string]any{"comment_id": cm.ID, "verdict": verdict, "review_decision": pr.ReviewDecision, "pr_id": pr.ID}, nil
}

// merge lands a pull request on its base.
func (c *call) merge(ctx context.Context) (map[string]any, error) {
	id, err := c.prID()
	if err != nil {
		return nil, err
	}
	strategy, err := c.str("strategy")
	if err != nil {
		return nil, err
	}
	f, err := c.forge(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := f.Merge(ctx, id, strategy)
	if pr == nil {
		return nil, err
	}
	return map[string]any{"sha": pr.MergedSHA, "strategy": pr.Strategy, "pushed": pr.Pushed, "pr_state": pr.State, "pr_id": pr.ID}, err
}
