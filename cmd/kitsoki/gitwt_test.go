//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a git repository holding testdata/gitwt/app.yaml and a
// README, committed on main; it skips the test when git is not installed.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the git handlers' real runs need it")
	}
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "gitwt", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestGitWorktreeRealRun: a worktree is created, a host.run commits in it,
// and cleanup removes the directory and the branch.
func TestGitWorktreeRealRun(t *testing.T) {
	ws := gitRepo(t)
	t.Setenv("KITSOKI_GITWT_TEST_TOKEN", "unused-here")
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--session", "s1",
		"--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "create,use")
	if code != exitIncomplete {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	wt := filepath.Join(ws, ".worktrees", "feature-x")
	for _, want := range []string{"path=[" + wt + "] created=true", "branch=feature/x log=[note"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(wt, "note.txt")); err != nil {
		t.Errorf("host.run did not run in the worktree: %v", err)
	}
	if got := gitOut(t, ws, "branch", "--list", "feature/x"); !strings.Contains(got, "feature/x") {
		t.Errorf("branch feature/x missing after create: %q", got)
	}

	// A second run of the same session finds the worktree (created=false),
	// then merges its branch and cleans it up.
	code, out, errs = runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--session", "s1",
		"--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "create,cleanup,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"created=false", "recommended=1 deleted=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory still there after cleanup: %v", err)
	}
	if got := gitOut(t, ws, "branch", "--list", "feature/x"); got != "" {
		t.Errorf("branch feature/x still there after cleanup: %q", got)
	}
	if got := gitOut(t, ws, "worktree", "list"); strings.Contains(got, "feature-x") {
		t.Errorf("git still lists the worktree:\n%s", got)
	}
}

// TestGitWorktreeNotARepo: outside a git work tree the call fails with a
// message saying so.
func TestGitWorktreeNotARepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "gitwt", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "app.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(ws))
	t.Setenv("KITSOKI_GITWT_TEST_TOKEN", "unused-here")
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--workspace", ws,
		"--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "create,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	want := "failed: host.git_worktree.create: the workspace " + ws + " is not inside a git work tree"
	if !strings.Contains(out, want) || !strings.Contains(out, "run kitsoki on a story in a git repository, or pass --workspace with a directory inside one") {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
}

// TestDiffOpenAndTransportPostRealRun: host.diff.open prints the diff on
// stdout; host.transport.post prints the message with the secret masked.
func TestDiffOpenAndTransportPostRealRun(t *testing.T) {
	ws := gitRepo(t)
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "gitwt-secret-value-42"
	t.Setenv("KITSOKI_GITWT_TEST_TOKEN", secret)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--trace", tr, "--intents", "diff,post,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"── readme change (diff against HEAD) ──\ndiff --git a/README.md b/README.md\n",
		"-one\n+two\n── end of diff ──\n",
		"surface=text",
		"[kitsoki] ops · Deploy\ndeploying with token REDACTED\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, secret) || strings.Contains(string(b), secret) {
		t.Errorf("the secret is written unmasked:\nstdout:\n%s", out)
	}
}

// TestHostsListsGitHandlers: kitsoki hosts lists the new handlers with their
// fields.
func TestHostsListsGitHandlers(t *testing.T) {
	code, out, errs := runCLI(t, "", "hosts")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"host.git_worktree  The workspace interface over git worktrees",
		"host.git_worktree.create  Create (or return) a worktree of this session on a branch.",
		"host.git_worktree.cleanup_apply", "host.git_worktree.cleanup_scan", "host.git_worktree.get",
		"host.git_worktree.list", "host.git_worktree.sync",
		"host.diff.open  Show a change against a base as a text diff",
		"host.transport.post  Post a message to the terminal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kitsoki hosts lacks %q", want)
		}
	}
}
