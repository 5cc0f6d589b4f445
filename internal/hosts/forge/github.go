package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// GH is the GitHub CLI program.
const GH = "gh"

// GHMissing is what to do when gh is not installed.
const GHMissing = "install the GitHub CLI (https://cli.github.com) and sign in with gh auth login, or keep pull requests in the repository with git config " + Setting + " " + KindLocal

// GitHub is the forge on GitHub, driven through the gh CLI in the
// workspace's repository (gh finds the GitHub repository from its
// remotes; gh auth login signs it in: kitsoki handles no token).
type GitHub struct{ env Env }

// NewGitHub returns the GitHub forge.
func NewGitHub(env Env) *GitHub {
	if env.GH.Program == "" {
		env.GH = cmdrun.Tool{Program: GH, Logger: env.Logger, Root: env.FS.Workspace()}
	}
	env.GH.Missing = GHMissing
	env.GH.Env = append(slices.Clone(env.GH.Env), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1")
	return &GitHub{env: env}
}

// Kind is "github".
func (g *GitHub) Kind() string { return KindGitHub }

// gh runs gh in dir; its failures name gh and what it said, and a missing
// sign-in names gh auth login.
func (g *GitHub) gh(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.env.GH.Run(ctx, dir, args...)
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) {
		msg := ee.Message()
		if strings.Contains(msg, "gh auth login") || strings.Contains(msg, "not logged") {
			return "", fmt.Errorf("gh is not signed in to GitHub (%s): run gh auth login, or keep pull requests in the repository with git config %s %s", firstLine(msg), Setting, KindLocal)
		}
		return "", fmt.Errorf("gh %s: %s", strings.Join(args[:min(2, len(args))], " "), msg)
	}
	return out.Stdout, err
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

var prURL = regexp.MustCompile(`https?://\S+/pull/(\d+)`)

// Open pushes the head branch (gh needs it on GitHub) and creates the pull
// request; one already open for the branch is returned.
func (g *GitHub) Open(ctx context.Context, repo *gitrepo.Repo, req OpenRequest) (*PR, bool, error) {
	remote, err := repo.Upstream(ctx, req.Head)
	if err != nil {
		return nil, false, err
	}
	if remote == "" {
		remote = "origin"
	}
	if _, err := repo.RemoteURL(ctx, remote); err != nil {
		return nil, false, err
	}
	if _, err := repo.Git(ctx, "push", "--set-upstream", remote, "refs/heads/"+req.Head+":refs/heads/"+req.Head); err != nil {
		return nil, false, fmt.Errorf("push %s to %s before opening the pull request: %w", req.Head, remote, err)
	}
	args := []string{"pr", "create", "--base", req.Base, "--head", req.Head, "--title", req.Title, "--body", req.Body}
	if req.Draft {
		args = append(args, "--draft")
	}
	out, err := g.gh(ctx, repo.Dir, args...)
	created := true
	if err != nil {
		// gh refuses a second pull request for a branch, naming the first.
		m := prURL.FindStringSubmatch(err.Error())
		if m == nil || !strings.Contains(err.Error(), "already exists") {
			return nil, false, err
		}
		out, created = m[0], false
	}
	m := prURL.FindStringSubmatch(out)
	if m == nil {
		return nil, false, fmt.Errorf("gh pr create printed no pull request URL: %q", strings.TrimSpace(out))
	}
	pr, err := g.Get(ctx, m[1])
	return pr, created, err
}

// ghPR is the part of gh pr view --json kitsoki reads.
type ghPR struct {
	Number         int    `json:"number"`
	URL            string `json:"url"`
	Title          string `json:"title"`
	Body           string `json:"body"`
	State          string `json:"state"`
	IsDraft        bool   `json:"isDraft"`
	BaseRefName    string `json:"baseRefName"`
	HeadRefName    string `json:"headRefName"`
	HeadRefOid     string `json:"headRefOid"`
	ReviewDecision string `json:"reviewDecision"`
	MergeCommit    *struct {
		Oid string `json:"oid"`
	} `json:"mergeCommit"`
	Author   ghActor `json:"author"`
	Comments []struct {
		ID        string  `json:"id"`
		Author    ghActor `json:"author"`
		Body      string  `json:"body"`
		CreatedAt string  `json:"createdAt"`
	} `json:"comments"`
	Reviews []struct {
		ID          string  `json:"id"`
		Author      ghActor `json:"author"`
		Body        string  `json:"body"`
		State       string  `json:"state"`
		SubmittedAt string  `json:"submittedAt"`
	} `json:"reviews"`
	StatusCheckRollup []struct {
		Name       string `json:"name"`
		Context    string `json:"context"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
		State      string `json:"state"`
		DetailsURL string `json:"detailsUrl"`
		TargetURL  string `json:"targetUrl"`
	} `json:"statusCheckRollup"`
}

type ghActor struct {
	Login string `json:"login"`
}

const ghFields = "number,url,title,body,state,isDraft,baseRefName,headRefName,headRefOid,reviewDecision,mergeCommit,author,comments,reviews,statusCheckRollup"

func (g *GitHub) view(ctx context.Context, id string) (*PR, error) {
	if _, err := strconv.Atoi(id); err != nil {
		return nil, fmt.Errorf("with.pr_id %q is not a GitHub pull request number", id)
	}
	out, err := g.gh(ctx, g.env.Repo.Dir, "pr", "view", id, "--json", ghFields)
	if err != nil {
		return nil, err
	}
	var p ghPR
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		return nil, fmt.Errorf("gh pr view %s: unreadable JSON: %w", id, err)
	}
	return p.pr(), nil
}

// pr converts gh's view of a pull request.
func (p *ghPR) pr() *PR {
	pr := &PR{ID: strconv.Itoa(p.Number), URL: p.URL, Title: p.Title, Body: p.Body, Base: p.BaseRefName, Head: p.HeadRefName,
		HeadSHA: p.HeadRefOid, State: strings.ToLower(p.State), Draft: p.IsDraft, Author: p.Author.Login, Comments: []Comment{}}
	if p.MergeCommit != nil {
		pr.MergedSHA = p.MergeCommit.Oid
	}
	for _, c := range p.Comments {
		pr.Comments = append(pr.Comments, Comment{ID: c.ID, Author: c.Author.Login, Body: c.Body, Verdict: VerdictComment, Created: c.CreatedAt})
	}
	for _, r := range p.Reviews {
		v := VerdictComment
		switch r.State {
		case "APPROVED":
			v = VerdictApprove
		case "CHANGES_REQUESTED":
			v = VerdictRequestChanges
		}
		pr.Comments = append(pr.Comments, Comment{ID: r.ID, Author: r.Author.Login, Body: r.Body, Verdict: v, Created: r.SubmittedAt})
	}
	slices.SortStableFunc(pr.Comments, func(a, b Comment) int { return strings.Compare(a.Created, b.Created) })
	pr.ReviewDecision = strings.ToLower(p.ReviewDecision)
	for _, c := range p.StatusCheckRollup {
		ck := Check{Name: c.Name, SHA: p.HeadRefOid, URL: c.DetailsURL}
		if ck.Name == "" {
			ck.Name, ck.URL = c.Context, c.TargetURL
		}
		ck.State = ghCheckState(c.Status, c.Conclusion, c.State)
		pr.Checks = append(pr.Checks, ck)
	}
	return pr
}

// ghCheckState maps a check run (status, conclusion) or a commit status
// (state) to success, failure or pending.
func ghCheckState(status, conclusion, state string) string {
	switch strings.ToUpper(conclusion + state) {
	case "SUCCESS", "NEUTRAL", "SKIPPED":
		return CheckSuccess
	case "FAILURE", "ERROR", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED", "STARTUP_FAILURE", "STALE":
		return CheckFailure
	}
	if strings.EqualFold(status, "COMPLETED") {
		return CheckSuccess
	}
	return CheckPending
}

// Get reads a pull request.
func (g *GitHub) Get(ctx context.Context, id string) (*PR, error) { return g.view(ctx, id) }

// List returns the open pull requests of the repository.
func (g *GitHub) List(ctx context.Context) ([]*PR, error) {
	out, err := g.gh(ctx, g.env.Repo.Dir, "pr", "list", "--state", "open", "--json", "number,url,title,state,baseRefName,headRefName,headRefOid,author")
	if err != nil {
		return nil, err
	}
	var ps []ghPR
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		return nil, fmt.Errorf("gh pr list: unreadable JSON: %w", err)
	}
	var prs []*PR
	for i := range ps {
		prs = append(prs, ps[i].pr())
	}
	return prs, nil
}

// Comment posts a comment (gh pr comment) or a review (gh pr review).
func (g *GitHub) Comment(ctx context.Context, id, body, verdict string) (*Comment, *PR, error) {
	var args []string
	switch verdict {
	case VerdictApprove:
		args = []string{"pr", "review", id, "--approve", "--body", body}
	case VerdictRequestChanges:
		args = []string{"pr", "review", id, "--request-changes", "--body", body}
	default:
		args = []string{"pr", "comment", id, "--body", body}
	}
	out, err := g.gh(ctx, g.env.Repo.Dir, args...)
	if err != nil {
		return nil, nil, err
	}
	pr, err := g.view(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	c := &Comment{ID: strings.TrimSpace(out), Body: body, Verdict: verdict}
	if n := len(pr.Comments); n > 0 {
		last := pr.Comments[n-1]
		c.Author, c.Created = last.Author, last.Created
		if c.ID == "" {
			c.ID = last.ID
		}
	}
	return c, pr, nil
}

// Merge merges the pull request on GitHub with strategy and reads the
// merge commit back.
func (g *GitHub) Merge(ctx context.Context, id, strategy string) (*PR, error) {
	if strategy == "" {
		strategy = "merge"
	}
	if !slices.Contains(strategies, strategy) {
		return nil, fmt.Errorf("with.strategy %q is not a merge strategy (strategies: %s)", strategy, strings.Join(strategies, ", "))
	}
	pr, err := g.view(ctx, id)
	if err != nil {
		return nil, err
	}
	if pr.State != StateMerged {
		if _, err := g.gh(ctx, g.env.Repo.Dir, "pr", "merge", id, "--"+strategy); err != nil {
			return nil, err
		}
		if pr, err = g.view(ctx, id); err != nil {
			return nil, err
		}
	}
	pr.Strategy = strategy
	return pr, nil
}

// Diff is the pull request's diff as GitHub shows it.
func (g *GitHub) Diff(ctx context.Context, id string) (string, []any, error) {
	if _, err := strconv.Atoi(id); err != nil {
		return "", nil, fmt.Errorf("with.pr_id %q is not a GitHub pull request number", id)
	}
	diff, err := g.gh(ctx, g.env.Repo.Dir, "pr", "diff", id, "--color", "never")
	if err != nil {
		return "", nil, err
	}
	names, err := g.gh(ctx, g.env.Repo.Dir, "pr", "diff", id, "--name-only")
	if err != nil {
		return "", nil, err
	}
	return diff, gitrepo.Files(names), nil
}
