package runtime_test

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
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/testsupport/gitfixture"
)

// vcsStory copies testdata/vcs into a new repository (with a bare remote)
// and opens a live session of it there.
func vcsStory(t *testing.T) (*gitfixture.Repo, *orchestrator.Session) {
	t.Helper()
	src, err := os.ReadFile("testdata/vcs/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	repo := gitfixture.New(t, map[string]string{"README.md": "# demo\n", "story/app.yaml": string(src)})
	st, err := story.Load(filepath.Join(repo.Dir, "story", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: "live-1"}, Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if _, err := rt.Session().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return repo, rt.Session()
}

func turn(t *testing.T, sess *orchestrator.Session, intent string, slots map[string]any, want string) map[string]any {
	t.Helper()
	if _, err := sess.Turn(context.Background(), intent, slots, ""); err != nil {
		t.Fatalf("%s: %v", intent, err)
	}
	w := sess.World()
	if sess.State() != want {
		t.Fatalf("after %s: state %s, want %s (error %v)", intent, sess.State(), want, w["error"])
	}
	return w
}

// A story in Kitsoki's format drives iface.vcs.* and iface.ci.* on a real
// repository with a bare remote: branch, diff, commit, push, open a pull
// request, a failing then a passing test run, review comments, the status
// with comments, and a merge onto main that reaches the remote.
func TestVCSAndCIInterfacesLive(t *testing.T) {
	repo, sess := vcsStory(t)
	wt := filepath.Join(repo.Dir, ".worktrees", "w1")

	w := turn(t, sess, "start", nil, "proposed")
	if w["branch"] != "fix/greeting" || w["pr_id"] != "1" || !strings.HasPrefix(w["pr_url"].(string), "file://"+repo.Dir+"/.kitsoki/forge/pulls/1.json") {
		t.Errorf("branch %v, pr %v %v", w["branch"], w["pr_id"], w["pr_url"])
	}
	if diff := cmp.Diff([]any{"greeting.txt"}, w["files"]); diff != "" || !strings.Contains(w["diff"].(string), "+hello, world") {
		t.Errorf("the new file is in the diff (-want +got):\n%s\n%s", diff, w["diff"])
	}
	if got := gitfixture.Git(t, wt, "rev-parse", "HEAD"); got != w["sha"] {
		t.Errorf("commit sha %v, the worktree's HEAD %s", w["sha"], got)
	}
	if got := repo.Bare("rev-parse", "refs/heads/fix/greeting"); got != w["sha"] {
		t.Errorf("the remote's fix/greeting is %s, want the commit %v", got, w["sha"])
	}
	if w["remote_url"] != repo.Remote {
		t.Errorf("push url %v", w["remote_url"])
	}

	w = turn(t, sess, "test", nil, "tested")
	if w["tests_ok"] != false || w["tests_state"] != "failure" || w["tests_failed"] != int64(1) || !strings.Contains(w["tests_log"].(string), "want hello, got nothing") {
		t.Errorf("failing run: ok %v state %v failed %v log %q", w["tests_ok"], w["tests_state"], w["tests_failed"], w["tests_log"])
	}
	if w["ci_state"] != "failure" || w["ci_checks"] != "tests" {
		t.Errorf("remote_status after the failing run: %v %v", w["ci_state"], w["ci_checks"])
	}

	w = turn(t, sess, "fix", nil, "fixed")
	if w["tests_ok"] != true || w["tests_state"] != "success" {
		t.Errorf("passing run: %v %v %q", w["tests_ok"], w["tests_state"], w["tests_log"])
	}
	w = turn(t, sess, "review", nil, "reviewed")
	wantComments := "kitsoki (request_changes): Please end with a newline.\nkitsoki (approve): It does; approved."
	if w["comments"] != wantComments || w["review"] != "approved" || w["ci_state"] != "success" || w["ci_checks"] != "" {
		t.Errorf("pr_status: comments %q review %v ci %v %v", w["comments"], w["review"], w["ci_state"], w["ci_checks"])
	}

	w = turn(t, sess, "merge", nil, "merged")
	if got := repo.Git("rev-parse", "main"); got != w["merge_sha"] {
		t.Errorf("main is %s, the merge said %v", got, w["merge_sha"])
	}
	if got := repo.Bare("rev-parse", "refs/heads/main"); got != w["merge_sha"] {
		t.Errorf("the remote's main is %s, want %v", got, w["merge_sha"])
	}
	if got := repo.Git("show", "main:greeting.txt"); got != "hello, world" {
		t.Errorf("main's greeting.txt: %q", got)
	}
	if got := repo.Git("status", "--porcelain"); got != "" {
		t.Errorf("the workspace's checkout is not clean after the run:\n%s", got)
	}
}

// Bad input to the vcs and ci handlers is an error of the call, caught by
// the invoke's on_error, whose message names the fix.
func TestVCSBadInputCaughtByOnError(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, tc := range []struct{ name, want string }{
		{"outside", `host.git.commit: with.workdir "../.." is outside the workspace`},
		{"outside_ci", `host.local.run_tests: with.workdir "/" is outside the workspace`},
		{"dash_branch", `host.git.branch: with.name "-D" starts with '-': git would read it as an option; name a branch, commit or path`},
		{"dirty", "host.git.open_pr: the work tree %s has uncommitted changes the pull request would not contain (?? wip.txt): commit them (iface.vcs.commit) or stash them, then open the pull request"},
		{"no_gh", "host.github.pr_status: gh is not installed (not found in $PATH): install the GitHub CLI (https://cli.github.com) and sign in with gh auth login, or keep pull requests in the repository with git config kitsoki.forge local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, sess := vcsStory(t)
			if tc.name == "no_gh" {
				bin := t.TempDir()
				if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", bin+string(os.PathListSeparator)+"/bin") // git and bash, no gh
			}
			w := turn(t, sess, "bad_input", map[string]any{"case": tc.name}, "caught")
			want := strings.Replace(tc.want, "%s", repo.Dir, 1)
			if got, _ := w["error"].(string); !strings.Contains(got, want) {
				t.Errorf("last_error:\n  %s\nwant it to contain:\n  %s", got, want)
			}
		})
	}
}
