// Package forge is where the pull requests of the vcs interface live: a
// local forge kept in the workspace (a pull request is a branch pair with
// its comments, checks and state in files under .kitsoki/forge/), or
// GitHub through the gh CLI. Which one a repository uses is its git config
// kitsoki.forge (Choose); host.github always uses GitHub. The ci handlers
// record their runs as checks of the local forge, and pr_status and
// remote_status read them back.
package forge

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
)

// Setting is the git config key that picks a repository's forge.
const Setting = "kitsoki.forge"

// Kinds of forge.
const (
	KindLocal  = "local"
	KindGitHub = "github"
)

// PR states.
const (
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed"
)

// Check states (the roll-up of a pull request's checks is one of them too).
const (
	CheckSuccess = "success"
	CheckFailure = "failure"
	CheckPending = "pending"
)

// Comment verdicts.
const (
	VerdictComment        = "comment"
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
)

// Merge strategies.
var strategies = []string{"merge", "squash", "rebase"}

// Strategies returns the merge strategies.
func Strategies() []string { return slices.Clone(strategies) }

// PR is one pull request.
type PR struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Body      string    `json:"body,omitempty"`
	Base      string    `json:"base"`
	Head      string    `json:"head"`
	State     string    `json:"state"`
	Draft     bool      `json:"draft,omitempty"`
	URL       string    `json:"url,omitempty"`
	Author    string    `json:"author,omitempty"`
	Created   string    `json:"created_at,omitempty"`
	Updated   string    `json:"updated_at,omitempty"`
	Comments  []Comment `json:"comments"`
	MergedSHA string    `json:"merged_sha,omitempty"`
	BaseSHA   string    `json:"base_sha,omitempty"` // the base's commit the merge went onto
	Strategy  string    `json:"merge_strategy,omitempty"`
	Pushed    bool      `json:"pushed,omitempty"` // the merge was pushed to the base's remote

	// Read when the pull request is looked at, not stored.
	HeadSHA        string  `json:"-"`
	Checks         []Check `json:"-"`
	ReviewDecision string  `json:"-"`
}

// Comment is one comment or review of a pull request.
type Comment struct {
	ID      string `json:"id"`
	Author  string `json:"author"`
	Body    string `json:"body"`
	Verdict string `json:"verdict"`
	Created string `json:"created_at,omitempty"`
}

// Check is one CI result for a commit.
type Check struct {
	Name  string `json:"name"`
	State string `json:"state"`
	SHA   string `json:"sha,omitempty"`
	// Summary is one line about the run (counts, the command).
	Summary string `json:"summary,omitempty"`
	// Log is the tail of the run's output.
	Log   string `json:"log,omitempty"`
	Dirty bool   `json:"dirty,omitempty"` // the tree had uncommitted changes when it ran
	At    string `json:"at,omitempty"`
	URL   string `json:"url,omitempty"`
}

// OpenRequest is what open_pr asks for.
type OpenRequest struct {
	Title, Body, Base, Head string
	Draft                   bool
}

// Forge is where pull requests live.
type Forge interface {
	// Kind is "local" or "github".
	Kind() string
	// Open opens a pull request of head into base, or returns the open one
	// there is (created false). repo is the work tree head is checked out
	// in.
	Open(ctx context.Context, repo *gitrepo.Repo, req OpenRequest) (pr *PR, created bool, err error)
	// Get reads one pull request with its head commit, checks and review
	// decision.
	Get(ctx context.Context, id string) (*PR, error)
	// List returns the open pull requests.
	List(ctx context.Context) ([]*PR, error)
	// Comment adds a comment (verdict comment) or a review (approve,
	// request_changes).
	Comment(ctx context.Context, id, body, verdict string) (*Comment, *PR, error)
	// Merge lands the pull request on its base with strategy.
	Merge(ctx context.Context, id, strategy string) (*PR, error)
	// Diff is the pull request's change: the unified diff and the files.
	Diff(ctx context.Context, id string) (string, []any, error)
}

// Env is what a forge needs of the run.
type Env struct {
	FS     hostfs.FS
	Clock  clock.Clock
	Logger *slog.Logger
	// Repo is the workspace's git work tree.
	Repo *gitrepo.Repo
	// Git runs git (gitrepo.Tool).
	Git cmdrun.Tool
	// GH runs the GitHub CLI; its Program is "gh" unless a test names a
	// stand-in.
	GH cmdrun.Tool
	// Lock serialises the local forge's reads and writes within a run
	// (background jobs may call it at once); nil is no lock.
	Lock *sync.Mutex
	// Author names kitsoki's comments and pull requests on the local
	// forge (default "kitsoki").
	Author string
}

// Choose returns the forge the workspace's repository is set to use
// (git config kitsoki.forge: local, the default, or github); want, when not
// "", overrides the setting (host.github asks for github).
func Choose(ctx context.Context, env Env, want string) (Forge, error) {
	kind := want
	if kind == "" {
		v, ok, err := env.Repo.Config(ctx, Setting)
		if err != nil {
			return nil, err
		}
		kind = KindLocal
		if ok {
			kind = strings.ToLower(strings.TrimSpace(v))
		}
	}
	switch kind {
	case KindLocal:
		return NewLocal(env), nil
	case KindGitHub:
		return NewGitHub(env), nil
	}
	return nil, fmt.Errorf("git config %s is %q: set it to %s (pull requests kept in the repository under .kitsoki/forge) or %s (GitHub through the gh CLI), e.g. git config %s %s",
		Setting, kind, KindLocal, KindGitHub, Setting, KindLocal)
}

// Rollup is the state of a set of checks: failure when one failed,
// pending when one has not finished, else success (no checks: nothing
// blocks).
func Rollup(checks []Check) string {
	state := CheckSuccess
	for _, c := range checks {
		switch c.State {
		case CheckFailure:
			return CheckFailure
		case CheckPending:
			state = CheckPending
		}
	}
	return state
}

// ReviewDecision is what a pull request's reviews add up to: the last
// approve or request_changes verdict of each author, changes_requested
// when one asks for changes, approved when one approves, else "".
func ReviewDecision(cs []Comment) string {
	last := map[string]string{}
	for _, c := range cs {
		if c.Verdict == VerdictApprove || c.Verdict == VerdictRequestChanges {
			last[c.Author] = c.Verdict
		}
	}
	decision := ""
	for _, v := range last {
		if v == VerdictRequestChanges {
			return "changes_requested"
		}
		decision = "approved"
	}
	return decision
}

// Data is a pull request as the handlers return it, with the keys Kitsoki's
// stories bind: state is the roll-up of its checks (success, failure or
// pending: what pr-refinement branches on), checks the comma-separated names
// of the failing ones, comments the comments as text; the structured forms
// are pr_state, check_runs and comment_list.
func (pr *PR) Data() map[string]any {
	failing := []string{}
	runs := []any{}
	for _, c := range pr.Checks {
		if c.State == CheckFailure {
			failing = append(failing, c.Name)
		}
		runs = append(runs, map[string]any{"name": c.Name, "state": c.State, "sha": c.SHA, "summary": c.Summary, "log": c.Log, "url": c.URL})
	}
	list := []any{}
	var text []string
	for _, c := range pr.Comments {
		list = append(list, map[string]any{"id": c.ID, "author": c.Author, "body": c.Body, "verdict": c.Verdict, "created_at": c.Created})
		line := c.Author
		if c.Verdict != VerdictComment && c.Verdict != "" {
			line += " (" + c.Verdict + ")"
		}
		text = append(text, line+": "+c.Body)
	}
	return map[string]any{
		"pr_id": pr.ID, "url": pr.URL, "title": pr.Title, "body": pr.Body, "base": pr.Base, "head": pr.Head,
		"head_sha": pr.HeadSHA, "pr_state": pr.State, "state": Rollup(pr.Checks), "checks": strings.Join(failing, ","),
		"check_runs": runs, "comments": strings.Join(text, "\n"), "comment_list": list, "comment_count": int64(len(pr.Comments)),
		"review_decision": pr.ReviewDecision, "merged_sha": pr.MergedSHA, "merge_strategy": pr.Strategy, "draft": pr.Draft,
	}
}
