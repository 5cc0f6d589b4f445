package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// Dir is where the local forge keeps its files, relative to the workspace:
// pulls/<id>.json (one pull request each) and checks/<sha>.json (the CI
// results of a commit, by check name).
const Dir = ".kitsoki/forge"

// Local is the forge kept in the workspace.
type Local struct{ env Env }

// NewLocal returns the workspace's local forge.
func NewLocal(env Env) *Local {
	if env.Author == "" {
		env.Author = "kitsoki"
	}
	return &Local{env: env}
}

// Kind is "local".
func (l *Local) Kind() string { return KindLocal }

func (l *Local) lock() func() {
	if l.env.Lock == nil {
		return func() {}
	}
	l.env.Lock.Lock()
	return l.env.Lock.Unlock
}

func (l *Local) now() string { return l.env.Clock.Now().UTC().Format(time.RFC3339) }

func (l *Local) path(elem ...string) (string, error) {
	return l.env.FS.Join(append([]string{filepath.FromSlash(Dir)}, elem...)...)
}

// Open records a pull request of req.Head into req.Base.
func (l *Local) Open(ctx context.Context, repo *gitrepo.Repo, req OpenRequest) (*PR, bool, error) {
	defer l.lock()()
	if _, err := repo.SHA(ctx, req.Base); err != nil {
		return nil, false, fmt.Errorf("with.base: %w", err)
	}
	prs, err := l.all()
	if err != nil {
		return nil, false, err
	}
	for _, pr := range prs {
		if pr.State == StateOpen && pr.Head == req.Head && pr.Base == req.Base {
			return l.fill(ctx, pr), false, nil
		}
	}
	n, err := repo.Line(ctx, "rev-list", "--count", req.Base+".."+req.Head)
	if err != nil {
		return nil, false, err
	}
	if n == "0" {
		return nil, false, fmt.Errorf("%s has no commits that %s lacks, so there is nothing to review: commit the change on %s first (iface.vcs.commit)", req.Head, req.Base, req.Head)
	}
	next := 1
	for _, pr := range prs {
		if k, err := strconv.Atoi(pr.ID); err == nil && k >= next {
			next = k + 1
		}
	}
	now := l.now()
	pr := &PR{Title: req.Title, Body: req.Body, Base: req.Base, Head: req.Head, State: StateOpen, Draft: req.Draft, Author: l.env.Author,
		Created: now, Updated: now, Comments: []Comment{}}
	for ; ; next++ {
		pr.ID = strconv.Itoa(next)
		p, err := l.path("pulls", pr.ID+".json")
		if err != nil {
			return nil, false, err
		}
		pr.URL = "file://" + filepath.ToSlash(p)
		b, _ := json.MarshalIndent(pr, "", "  ")
		err = l.env.FS.CreateExclusive(p, append(b, '\n'))
		if errors.Is(err, fs.ErrExist) {
			continue // another run took this number
		}
		if err != nil {
			return nil, false, fmt.Errorf("record pull request: %w", err)
		}
		return l.fill(ctx, pr), true, nil
	}
}

// all reads every pull request, by number.
func (l *Local) all() ([]*PR, error) {
	dir, err := l.path("pulls")
	if err != nil {
		return nil, err
	}
	es, err := l.env.FS.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var prs []*PR
	for _, e := range es {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		pr, err := l.read(id)
		if err != nil {
			return nil, err
		}
		prs = append(prs, pr)
	}
	slices.SortFunc(prs, func(a, b *PR) int { return cmpID(a.ID, b.ID) })
	return prs, nil
}

func cmpID(a, b string) int {
	x, errx := strconv.Atoi(a)
	y, erry := strconv.Atoi(b)
	if errx == nil && erry == nil {
		return x - y
	}
	return strings.Compare(a, b)
}

// read loads the pull request id.
func (l *Local) read(id string) (*PR, error) {
	if _, err := strconv.Atoi(id); err != nil {
		return nil, fmt.Errorf("with.pr_id %q is not a pull request of the local forge: its ids are numbers (open_pr returns them as pr_id)", id)
	}
	p, err := l.path("pulls", id+".json")
	if err != nil {
		return nil, err
	}
	b, err := l.env.FS.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no pull request %q on the local forge (%s): open it first with iface.vcs.open_pr", id, filepath.Dir(p))
	}
	if err != nil {
		return nil, err
	}
	var pr PR
	if err := json.Unmarshal(b, &pr); err != nil {
		return nil, fmt.Errorf("%s: %w: fix or remove the file", p, err)
	}
	if pr.Comments == nil {
		pr.Comments = []Comment{}
	}
	return &pr, nil
}

func (l *Local) write(pr *PR) error {
	p, err := l.path("pulls", pr.ID+".json")
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(pr, "", "  ")
	return l.env.FS.WriteFile(p, append(b, '\n'))
}

// fill reads what is not stored: the head's commit, its checks, the review
// decision.
func (l *Local) fill(ctx context.Context, pr *PR) *PR {
	pr.HeadSHA = ""
	if pr.State == StateMerged && pr.MergedSHA != "" {
		pr.HeadSHA = pr.MergedSHA
	} else if sha, err := l.env.Repo.SHA(ctx, "refs/heads/"+pr.Head); err == nil {
		pr.HeadSHA = sha
	}
	pr.Checks = nil
	if pr.HeadSHA != "" {
		pr.Checks, _ = l.ChecksFor(pr.HeadSHA)
	}
	pr.ReviewDecision = ReviewDecision(pr.Comments)
	return pr
}

// Get reads a pull request.
func (l *Local) Get(ctx context.Context, id string) (*PR, error) {
	defer l.lock()()
	pr, err := l.read(id)
	if err != nil {
		return nil, err
	}
	return l.fill(ctx, pr), nil
}

// List returns the open pull requests.
func (l *Local) List(ctx context.Context) ([]*PR, error) {
	defer l.lock()()
	prs, err := l.all()
	if err != nil {
		return nil, err
	}
	var open []*PR
	for _, pr := range prs {
		if pr.State == StateOpen {
			open = append(open, l.fill(ctx, pr))
		}
	}
	return open, nil
}

// Comment adds a comment or review.
func (l *Local) Comment(ctx context.Context, id, body, verdict string) (*Comment, *PR, error) {
	defer l.lock()()
	pr, err := l.read(id)
	if err != nil {
		return nil, nil, err
	}
	c := Comment{ID: fmt.Sprintf("%s#%d", pr.ID, len(pr.Comments)+1), Author: l.env.Author, Body: body, Verdict: verdict, Created: l.now()}
	pr.Comments = append(pr.Comments, c)
	pr.Updated = c.Created
	if err := l.write(pr); err != nil {
		return nil, nil, err
	}
	return &c, l.fill(ctx, pr), nil
}

// Diff is the pull request's change against the point it left its base
// (for a merged one: what the merge brought).
func (l *Local) Diff(ctx context.Context, id string) (string, []any, error) {
	pr, err := l.Get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	rng := pr.Base + "..." + pr.Head
	if pr.State == StateMerged && pr.MergedSHA != "" && pr.BaseSHA != "" {
		rng = pr.BaseSHA + ".." + pr.MergedSHA
	}
	diff, err := l.env.Repo.Git(ctx, "diff", "--no-color", rng, "--")
	if err != nil {
		return "", nil, err
	}
	names, err := l.env.Repo.Git(ctx, "diff", "--name-only", rng, "--")
	if err != nil {
		return "", nil, err
	}
	return diff, gitrepo.Files(names), nil
}

// RecordCheck stores a CI result for the commit c.SHA (replacing the one of
// the same name).
func (l *Local) RecordCheck(c Check) error {
	defer l.lock()()
	checks, err := l.checks(c.SHA)
	if err != nil {
		return err
	}
	if c.At == "" {
		c.At = l.now()
	}
	checks[c.Name] = c
	p, err := l.path("checks", c.SHA+".json")
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(checks, "", "  ")
	return l.env.FS.WriteFile(p, append(b, '\n'))
}

// ChecksFor returns the CI results recorded for commit sha, by name.
func (l *Local) ChecksFor(sha string) ([]Check, error) {
	m, err := l.checks(sha)
	if err != nil {
		return nil, err
	}
	var out []Check
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out, nil
}

func (l *Local) checks(sha string) (map[string]Check, error) {
	if sha == "" || strings.ContainsAny(sha, `/\.`) {
		return nil, fmt.Errorf("check for commit %q: not a commit id", sha)
	}
	p, err := l.path("checks", sha+".json")
	if err != nil {
		return nil, err
	}
	b, err := l.env.FS.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Check{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]Check{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: fix or remove the file", p, err)
	}
	return m, nil
}
