// Package gitfixture makes the git repositories the git-backed handlers'
// tests run against: a work tree with one commit on main, its author set,
// and a bare repository as its origin, all in temporary directories, with
// the machine's git configuration kept out (HOME and the global config
// point at the test's own directory).
package gitfixture

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a work tree and its bare remote.
type Repo struct {
	Dir    string // the work tree (main checked out)
	Remote string // the bare repository, the work tree's origin
	t      testing.TB
}

// Isolate points HOME and git's global configuration at a directory of the
// test, so the machine's git setup does not change what git does. It uses
// t.Setenv: the test must not be parallel.
func Isolate(t testing.TB) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	cfg := "[user]\n\tname = Kit Test\n\temail = kit@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// New makes a work tree with files (name → content; default one README)
// committed on main, and a bare origin it has pushed main to (main tracks
// origin/main). It skips the test when git is not installed, and isolates
// git from the machine (Isolate).
func New(t testing.TB, files map[string]string) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the git handlers need it")
	}
	Isolate(t)
	root := t.TempDir()
	r := &Repo{Dir: filepath.Join(root, "work"), Remote: filepath.Join(root, "origin.git"), t: t}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		files = map[string]string{"README.md": "# demo\n"}
	}
	r.Write(files)
	r.Git("init", "-q", "-b", "main")
	r.Git("add", "-A")
	r.Git("commit", "-qm", "init")
	Git(t, root, "init", "-q", "--bare", "-b", "main", r.Remote)
	r.Git("remote", "add", "origin", r.Remote)
	r.Git("push", "-q", "-u", "origin", "main")
	if real, err := filepath.EvalSymlinks(r.Dir); err == nil {
		r.Dir = real
	}
	return r
}

// Write writes files (name → content) under the work tree.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for name, body := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// Git runs git in the work tree and returns its output trimmed.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return Git(r.t, r.Dir, args...)
}

// Bare runs git in the bare remote.
func (r *Repo) Bare(args ...string) string {
	r.t.Helper()
	return Git(r.t, r.Remote, args...)
}

// Git runs git in dir, failing the test when it fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}
