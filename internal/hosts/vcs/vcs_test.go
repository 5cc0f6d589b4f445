package vcs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/testsupport/gitfixture"
)

type fixture struct {
	t    *testing.T
	repo *gitfixture.Repo
	git  *Handler
	gh   *Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := gitfixture.New(t, map[string]string{"a.txt": "one\n", ".gitignore": ".worktrees/\n"})
	ws, err := workspace.New(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Workspace: ws, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	return &fixture{t: t, repo: repo, git: New(cfg, Name), gh: New(cfg, GitHubName)}
}

// do runs op on hd and fails the test on an error of the call.
func (f *fixture) do(hd *Handler, op string, args map[string]any) map[string]any {
	f.t.Helper()
	r := hd.Invoke(context.Background(), &host.Call{Namespace: hd.name + "." + op, Args: args, SessionID: "s1"}, op)
	if r.Err != nil {
		f.t.Fatalf("%s.%s %v: %v", hd.name, op, args, r.Err)
	}
	if r.Data["ok"] != true {
		f.t.Fatalf("%s.%s: ok is %v", hd.name, op, r.Data["ok"])
	}
	return r.Data
}

// fail runs op and returns its error text.
func (f *fixture) fail(hd *Handler, op string, args map[string]any) string {
	f.t.Helper()
	r := hd.Invoke(context.Background(), &host.Call{Namespace: hd.name + "." + op, Args: args, SessionID: "s1"}, op)
	if r.Err == nil {
		f.t.Fatalf("%s.%s %v: no error, data %v", hd.name, op, args, r.Data)
	}
	if r.Data["ok"] != false {
		f.t.Errorf("%s.%s failed with ok %v", hd.name, op, r.Data["ok"])
	}
	return r.Err.Error()
}

// worktree adds a linked worktree of the fixture on a new branch, as
// iface.workspace.create does, and returns its path relative to the
// workspace.
func (f *fixture) worktree(id, branch string) string {
	f.t.Helper()
	rel := filepath.Join(".worktrees", id)
	f.repo.Git("worktree", "add", "-q", "-b", branch, rel, "main")
	return rel
}

func (f *fixture) write(rel, body string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.repo.Dir, rel), []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// The whole vcs round trip on the local forge: a branch in a linked
// worktree, a diff, commits, a push to the bare remote, a pull request with
// comments and reviews, its status, and a squash merge onto main that is
// pushed to the remote.
func TestLocalForgeRoundTrip(t *testing.T) {
	f := newFixture(t)
	wt := f.worktree("w1", "fix/a")
	f.write(filepath.Join(wt, "a.txt"), "one\ntwo\n")
	f.write(filepath.Join(wt, "b.txt"), "new file\n")

	d := f.do(f.git, "diff", map[string]any{"workdir": wt})
	if d["base"] != "main" || !strings.Contains(d["diff"].(string), "+two") {
		t.Errorf("diff = %v, want the change to a.txt against main", d)
	}
	if diff := cmp.Diff([]any{"a.txt", "b.txt"}, d["files"]); diff != "" || !strings.Contains(d["diff"].(string), "+new file") {
		t.Errorf("diff files (-want +got; the new b.txt too):\n%s", diff)
	}

	c := f.do(f.git, "commit", map[string]any{"workdir": wt, "message": "Fix a", "stage_all": true})
	if c["committed"] != true || c["branch"] != "fix/a" {
		t.Fatalf("commit = %v", c)
	}
	if diff := cmp.Diff([]any{"a.txt", "b.txt"}, c["files"]); diff != "" {
		t.Errorf("committed files (-want +got):\n%s", diff)
	}
	if got := f.repo.Git("-C", wt, "rev-parse", "HEAD"); got != c["sha"] {
		t.Errorf("sha %v, HEAD %s", c["sha"], got)
	}
	again := f.do(f.git, "commit", map[string]any{"workdir": wt, "message": "again", "stage_all": true})
	if again["committed"] != false || again["sha"] != c["sha"] {
		t.Errorf("a commit with nothing to commit = %v, want committed false and the same sha", again)
	}

	p := f.do(f.git, "push", map[string]any{"workdir": wt, "remote": "origin"})
	if p["branch"] != "fix/a" || p["url"] != f.repo.Remote {
		t.Errorf("push = %v", p)
	}
	if got := f.repo.Bare("rev-parse", "refs/heads/fix/a"); got != c["sha"] {
		t.Errorf("the remote's fix/a is %s, want %v", got, c["sha"])
	}

	pr := f.do(f.git, "open_pr", map[string]any{"workdir": wt, "title": "Fix a", "body": "Closes #1", "base": "main"})
	if pr["pr_id"] != "1" || pr["created"] != true || pr["state"] != "success" || pr["pr_state"] != "open" || pr["draft"] != false {
		t.Fatalf("open_pr = %v", pr)
	}
	if again := f.do(f.git, "open_pr", map[string]any{"workdir": wt, "base": "main"}); again["pr_id"] != "1" || again["created"] != false {
		t.Errorf("opening again = %v, want the open pull request 1", again)
	}

	f.do(f.git, "pr_comment", map[string]any{"pr_id": "1", "body": "please add a test", "request_changes": true})
	if s := f.do(f.git, "pr_status", map[string]any{"pr_id": "1"}); s["review_decision"] != "changes_requested" {
		t.Errorf("after request_changes: %v", s["review_decision"])
	}
	f.do(f.git, "pr_comment", map[string]any{"pr_id": "1", "body": "added"})
	cm := f.do(f.git, "pr_comment", map[string]any{"pr_id": "1", "approve": true})
	if cm["comment_id"] != "1#3" || cm["review_decision"] != "approved" {
		t.Errorf("approve = %v", cm)
	}
	s := f.do(f.git, "pr_status", map[string]any{"pr_id": "1"})
	wantComments := "kitsoki (request_changes): please add a test\nkitsoki: added\nkitsoki (approve): "
	if s["comments"] != wantComments || s["comment_count"] != int64(3) || s["checks"] != "" || s["state"] != "success" {
		t.Errorf("pr_status = %v", s)
	}

	m := f.do(f.git, "merge", map[string]any{"pr_id": "1", "strategy": "squash"})
	if m["pushed"] != true || m["pr_state"] != "merged" {
		t.Fatalf("merge = %v", m)
	}
	if got := f.repo.Git("rev-parse", "main"); got != m["sha"] {
		t.Errorf("main is %s, the merge said %v", got, m["sha"])
	}
	if got := f.repo.Bare("rev-parse", "refs/heads/main"); got != m["sha"] {
		t.Errorf("the remote's main is %s, want the merge %v", got, m["sha"])
	}
	if got := f.repo.Git("log", "-1", "--format=%s", "main"); got != "Fix a (#1)" {
		t.Errorf("squash commit subject %q", got)
	}
	if got := f.repo.Git("show", "main:b.txt"); got != "new file" {
		t.Errorf("main's b.txt = %q", got)
	}
	if st, _ := os.ReadFile(filepath.Join(f.repo.Dir, "b.txt")); string(st) != "new file\n" {
		t.Errorf("the workspace (main checked out) was not updated by the merge: b.txt = %q", st)
	}
	if got := f.do(f.git, "merge", map[string]any{"pr_id": "1"}); got["sha"] != m["sha"] {
		t.Errorf("merging a merged pull request = %v, want it as it was", got)
	}
	if changes := f.repo.Git("status", "--porcelain"); changes != "" {
		t.Errorf("the workspace is not clean after the round trip (kitsoki's files must not show):\n%s", changes)
	}
}

// open_pr's draft on the local forge is recorded with the pull request
// and read back by pr_status, as GitHub keeps it.
func TestLocalDraftPullRequest(t *testing.T) {
	f := newFixture(t)
	wt := f.worktree("w1", "fix/draft")
	f.write(filepath.Join(wt, "a.txt"), "draft\n")
	f.do(f.git, "commit", map[string]any{"workdir": wt, "message": "wip", "stage_all": true})
	pr := f.do(f.git, "open_pr", map[string]any{"workdir": wt, "title": "WIP", "draft": "true"})
	if pr["draft"] != true {
		t.Errorf("open_pr draft = %v, want true", pr["draft"])
	}
	if s := f.do(f.git, "pr_status", map[string]any{"pr_id": pr["pr_id"]}); s["draft"] != true {
		t.Errorf("pr_status draft = %v, want true", s["draft"])
	}
	rec, err := os.ReadFile(filepath.Join(f.repo.Dir, ".kitsoki", "forge", "pulls", "1.json"))
	if err != nil || !strings.Contains(string(rec), `"draft": true`) {
		t.Errorf("the pull request's record does not keep draft: %s %v", rec, err)
	}
}

// Merge strategies, with the base checked out nowhere (merged in a
// temporary worktree, the branch moved) and checked out in the workspace.
func TestMergeStrategies(t *testing.T) {
	for _, strategy := range []string{"merge", "squash", "rebase"} {
		t.Run(strategy, func(t *testing.T) {
			f := newFixture(t)
			f.repo.Git("switch", "-q", "-c", "parking") // main is checked out nowhere
			wt := f.worktree("w1", "fix/"+strategy)
			f.write(filepath.Join(wt, "a.txt"), "changed\n")
			f.do(f.git, "commit", map[string]any{"workdir": wt, "message": "change a", "files": []any{"a.txt"}})
			pr := f.do(f.git, "open_pr", map[string]any{"workdir": wt, "title": "Change a"})
			if pr["base"] != "main" {
				t.Fatalf("default base %v", pr["base"])
			}
			m := f.do(f.git, "merge", map[string]any{"pr_id": pr["pr_id"], "strategy": strategy})
			if got := f.repo.Git("show", "main:a.txt"); got != "changed" {
				t.Errorf("main's a.txt = %q", got)
			}
			if got := f.repo.Git("rev-parse", "main"); got != m["sha"] {
				t.Errorf("main %s, merge sha %v", got, m["sha"])
			}
			parents := strings.Fields(f.repo.Git("log", "-1", "--format=%P", "main"))
			if want := map[string]int{"merge": 2, "squash": 1, "rebase": 1}[strategy]; len(parents) != want {
				t.Errorf("%s made a commit with %d parents, want %d", strategy, len(parents), want)
			}
			if wts := f.repo.Git("worktree", "list"); strings.Contains(wts, ".kitsoki/tmp") {
				t.Errorf("a temporary worktree was left:\n%s", wts)
			}
		})
	}
}

func TestBranchAndCommitFiles(t *testing.T) {
	f := newFixture(t)
	b := f.do(f.git, "branch", map[string]any{"name": "feat/x", "base": "main"})
	if b["created"] != true || f.repo.Git("branch", "--show-current") != "feat/x" {
		t.Fatalf("branch = %v", b)
	}
	if b := f.do(f.git, "branch", map[string]any{"name": "feat/x"}); b["created"] != false {
		t.Errorf("the branch again = %v", b)
	}
	f.write("a.txt", "edited\n")
	f.write("c.txt", "other\n")
	c := f.do(f.git, "commit", map[string]any{"message": "only a", "files": []any{"a.txt"}})
	if diff := cmp.Diff([]any{"a.txt"}, c["files"]); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if st := f.repo.Git("status", "--porcelain"); st != "?? c.txt" {
		t.Errorf("status after committing a.txt only: %q", st)
	}
	f.write("a.txt", "again\n")
	if c := f.do(f.git, "commit", map[string]any{"message": "tracked"}); c["committed"] != true {
		t.Errorf("commit of the tracked changes = %v", c)
	}
	if c := f.do(f.git, "commit", map[string]any{"message": "nothing"}); c["committed"] != false {
		t.Errorf("commit with only untracked files and no stage_all = %v, want nothing committed", c)
	}
}

// Every refused call, with its message: each names the fix.
func TestErrors(t *testing.T) {
	f := newFixture(t)
	wt := f.worktree("w1", "fix/a")
	f.write(filepath.Join(wt, "a.txt"), "dirty\n")
	outside := t.TempDir()
	tests := []struct {
		name, op string
		args     map[string]any
		want     string
	}{
		{"workdir outside", "commit", map[string]any{"workdir": "../..", "message": "m"}, `host.git.commit: with.workdir "../.." is outside the workspace`},
		{"workdir absolute outside", "diff", map[string]any{"workdir": outside}, "is outside the workspace"},
		{"workdir missing", "diff", map[string]any{"workdir": ".worktrees/nope"}, `with.workdir ".worktrees/nope" does not exist`},
		{"branch option", "branch", map[string]any{"name": "-rf"}, `host.git.branch: with.name "-rf" starts with '-': git would read it as an option`},
		{"branch invalid", "branch", map[string]any{"name": "a..b"}, `with.name "a..b" is not a valid branch name`},
		{"base option", "branch", map[string]any{"name": "x", "base": "--all"}, `with.base "--all" starts with '-'`},
		{"remote option", "push", map[string]any{"workdir": wt, "remote": "-f"}, `with.remote "-f" starts with '-'`},
		{"no such remote", "push", map[string]any{"workdir": wt, "remote": "upstream"}, `the repository has no remote "upstream" (its remotes: origin): add one with git remote add upstream URL`},
		{"no message", "commit", map[string]any{"workdir": wt, "message": " "}, "with.message is required"},
		{"unknown field", "commit", map[string]any{"workdir": wt, "message": "m", "sign": true}, "with.sign is not a field of host.git.commit"},
		{"dirty open", "open_pr", map[string]any{"workdir": wt}, "has uncommitted changes the pull request would not contain (M a.txt): commit them (iface.vcs.commit) or stash them"},
		{"open on base", "open_pr", map[string]any{}, "is on main itself: open the pull request from a feature branch"},
		{"no pr id", "pr_status", map[string]any{}, "with.pr_id is required"},
		{"unknown pr", "pr_status", map[string]any{"pr_id": "9"}, `no pull request "9" on the local forge`},
		{"bad pr id", "merge", map[string]any{"pr_id": "abc"}, `with.pr_id "abc" is not a pull request of the local forge`},
		{"both verdicts", "pr_comment", map[string]any{"pr_id": "1", "body": "x", "approve": true, "request_changes": true}, "both set"},
		{"files outside", "commit", map[string]any{"workdir": wt, "message": "m", "files": []any{"../../../x"}}, "is outside the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.fail(f.git, tt.op, tt.args); !strings.Contains(got, tt.want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
}

// A merge whose base checkout has uncommitted changes is refused before
// anything moves; so is one that conflicts, which leaves the base clean.
func TestMergeRefusals(t *testing.T) {
	f := newFixture(t)
	wt := f.worktree("w1", "fix/a")
	f.write(filepath.Join(wt, "a.txt"), "theirs\n")
	f.do(f.git, "commit", map[string]any{"workdir": wt, "message": "theirs", "stage_all": true})
	pr := f.do(f.git, "open_pr", map[string]any{"workdir": wt, "title": "t"})
	f.write("a.txt", "uncommitted\n")
	got := f.fail(f.git, "merge", map[string]any{"pr_id": pr["pr_id"]})
	want := "host.git.merge: the base branch main is checked out at " + f.repo.Dir + ", which has uncommitted changes (M a.txt): commit or stash them there, then merge again"
	if got != want {
		t.Errorf("dirty base:\n got %s\nwant %s", got, want)
	}
	f.repo.Git("commit", "-qam", "ours") // now main and fix/a both changed a.txt
	got = f.fail(f.git, "merge", map[string]any{"pr_id": pr["pr_id"]})
	if !strings.Contains(got, "does not merge cleanly into main: these files conflict: a.txt; merge main into fix/a on the branch, resolve them") {
		t.Errorf("conflict: %s", got)
	}
	if st := f.repo.Git("status", "--porcelain"); st != "" {
		t.Errorf("the base checkout was left with %q after the failed merge", st)
	}
	if s := f.do(f.git, "pr_status", map[string]any{"pr_id": pr["pr_id"]}); s["pr_state"] != "open" {
		t.Errorf("a failed merge changed the pull request: %v", s["pr_state"])
	}
}

// The forge setting: an unknown value is refused naming the values.
func TestForgeSetting(t *testing.T) {
	f := newFixture(t)
	f.repo.Git("config", "kitsoki.forge", "gitlab")
	got := f.fail(f.git, "pr_status", map[string]any{"pr_id": "1"})
	if !strings.Contains(got, `git config kitsoki.forge is "gitlab": set it to local (pull requests kept in the repository under .kitsoki/forge) or github`) {
		t.Errorf("error %s", got)
	}
}

// fakeGH puts testdata/gh (a stand-in for the GitHub CLI) first in PATH and
// returns the file it logs its calls to.
func fakeGH(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	log := filepath.Join(tmp, "gh.log")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_GH_LOG", log)
	t.Setenv("FAKE_GH_STATE", filepath.Join(tmp, "state"))
	return log
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// host.github (and host.git with kitsoki.forge github) send the pull
// request operations to GitHub through gh; the head is pushed first.
func TestGitHubForge(t *testing.T) {
	f := newFixture(t)
	log := fakeGH(t)
	wt := f.worktree("w1", "fix/a")
	f.write(filepath.Join(wt, "a.txt"), "two\n")
	f.do(f.gh, "commit", map[string]any{"workdir": wt, "message": "Fix it", "stage_all": true})

	pr := f.do(f.gh, "open_pr", map[string]any{"workdir": wt, "title": "Fix it", "body": "Closes #1", "base": "main", "draft": true})
	want := map[string]any{"pr_id": "7", "draft": true, "url": "https://github.com/acme/widgets/pull/7", "state": "failure", "checks": "lint",
		"comments": "ana: please add a test\nbo (approve): lgtm", "review_decision": "approved", "pr_state": "open", "created": true}
	for k, v := range want {
		if pr[k] != v {
			t.Errorf("open_pr %s = %v, want %v", k, pr[k], v)
		}
	}
	if got := f.repo.Bare("rev-parse", "refs/heads/fix/a"); got != f.repo.Git("-C", wt, "rev-parse", "HEAD") {
		t.Errorf("the head was not pushed before gh pr create: the remote has %s", got)
	}
	runs := pr["check_runs"].([]any)
	if len(runs) != 3 || runs[2].(map[string]any)["state"] != "pending" || runs[2].(map[string]any)["name"] != "deploy" {
		t.Errorf("check_runs = %v", runs)
	}

	f.do(f.gh, "pr_comment", map[string]any{"pr_id": "7", "body": "needs work", "request_changes": true})
	f.do(f.gh, "pr_comment", map[string]any{"pr_id": "7", "body": "thanks"})
	d := f.do(f.gh, "diff", map[string]any{"pr_id": "7"})
	if diff := cmp.Diff([]any{"a.txt"}, d["files"]); diff != "" || !strings.Contains(d["diff"].(string), "+new") {
		t.Errorf("diff = %v", d)
	}
	all := f.do(f.gh, "pr_status", map[string]any{"pr_id": "*"})
	if all["count"] != int64(1) || all["comments"] != "#7 Fix it (fix/a → main, checks success)" {
		t.Errorf("pr_status * = %v", all)
	}
	m := f.do(f.gh, "merge", map[string]any{"pr_id": "7", "strategy": "squash"})
	if m["sha"] != "abc123merged" || m["pr_state"] != "merged" {
		t.Errorf("merge = %v", m)
	}
	f.repo.Git("config", "kitsoki.forge", "github")
	if s := f.do(f.git, "pr_status", map[string]any{"pr_id": "7"}); s["pr_state"] != "merged" {
		t.Errorf("host.git with kitsoki.forge github: %v", s)
	}
	calls := readLog(t, log)
	for _, want := range []string{
		"pr create --base main --head fix/a --title Fix it --body Closes #1 --draft\n",
		"pr review 7 --request-changes --body needs work\n",
		"pr comment 7 --body thanks\n",
		"pr merge 7 --squash\n",
		"pr diff 7 --color never\n",
	} {
		if !strings.Contains(calls, want) {
			t.Errorf("gh was not called with %q; calls:\n%s", want, calls)
		}
	}
}

// A missing gh and a gh that is not signed in are errors naming the fix.
func TestGitHubUnavailable(t *testing.T) {
	f := newFixture(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	got := f.fail(f.gh, "pr_status", map[string]any{"pr_id": "7"})
	want := "host.github.pr_status: gh is not installed (not found in $PATH): install the GitHub CLI (https://cli.github.com) and sign in with gh auth login, or keep pull requests in the repository with git config kitsoki.forge local"
	if got != want {
		t.Errorf("missing gh:\n got %s\nwant %s", got, want)
	}
	fakeGH(t)
	t.Setenv("FAKE_GH_SIGNED_OUT", "1")
	got = f.fail(f.gh, "pr_status", map[string]any{"pr_id": "7"})
	want = "host.github.pr_status: gh is not signed in to GitHub (To get started with GitHub CLI, please run:  gh auth login): run gh auth login, or keep pull requests in the repository with git config kitsoki.forge local"
	if got != want {
		t.Errorf("signed out:\n got %s\nwant %s", got, want)
	}
}
