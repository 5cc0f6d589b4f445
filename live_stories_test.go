package kitsoki_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/ci"
	"github.com/kitsoki/kitsoki/internal/hosts/gitwt"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/testsupport/corpus"
	"github.com/kitsoki/kitsoki/internal/testsupport/gitfixture"
	"github.com/kitsoki/kitsoki/internal/testsupport/scriptagent"
	"github.com/kitsoki/kitsoki/plugin"
)

// A Go project with a bug: Greet forgets the exclamation mark its doc
// promises.
var buggyProject = map[string]string{
	"go.mod":   "module example.com/greet\n\ngo 1.21\n",
	"greet.go": "package greet\n\n// Greet greets name with an exclamation mark.\nfunc Greet(name string) string { return \"Hello, \" + name }\n",
	"issues/bugs/BUG-1.md": "---\ntitle: Greet drops the exclamation mark\nstatus: open\nseverity: P2\n---\n" +
		"Greet(\"Ada\") returns \"Hello, Ada\"; its doc promises \"Hello, Ada!\".\n",
	".gitignore": "",
}

const fixedGreet = "package greet\n\n// Greet greets name with an exclamation mark.\nfunc Greet(name string) string { return \"Hello, \" + name + \"!\" }\n"

const greetTest = "package greet\n\nimport \"testing\"\n\nfunc TestGreetExclaims(t *testing.T) {\n\tif got := Greet(\"Ada\"); got != \"Hello, Ada!\" {\n\t\tt.Fatalf(\"Greet(Ada) = %q\", got)\n\t}\n}\n"

// liveRepo makes a repository holding the project and copies of the named
// corpus stories under stories/, committed, with a bare remote.
func liveRepo(t *testing.T, stories ...string) *gitfixture.Repo {
	t.Helper()
	stDir := corpus.Stories(t) // skips without the corpus
	_ = stDir
	goCache(t)
	repo := gitfixture.New(t, buggyProject)
	goCache(t)
	corpus.Copy(t, filepath.Join(repo.Dir, "stories"), stories...)
	repo.Git("add", "-A")
	repo.Git("commit", "-qm", "stories")
	repo.Git("push", "-q", "origin", "main")
	return repo
}

// goCache keeps the machine's Go build cache and module cache (the git
// fixture gives the test a fresh HOME) and stops toolchain downloads.
func goCache(t *testing.T) {
	t.Helper()
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		if v := os.Getenv(k); v != "" {
			t.Setenv(k, v)
			continue
		}
		out, err := execOutput("go", "env", k)
		if err != nil {
			t.Skip("go is not installed")
		}
		t.Setenv(k, strings.TrimSpace(out))
	}
	t.Setenv("GOTOOLCHAIN", "local")
}

// bugfixAgent plays every persona of the bugfix story: each answer is built
// from the call's schema, and the implementer and the test author edit the
// worktree they are given, as a coding agent would.
type bugfixAgent struct {
	repo  string
	mu    sync.Mutex
	calls []string
}

func (a *bugfixAgent) ask(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
	sub, err := scriptagent.Fill(req.Schema)
	if err != nil {
		return nil, err
	}
	persona, _ := req.With["agent"].(string)
	dir, _ := req.With["working_dir"].(string)
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(a.repo, dir)
	}
	a.mu.Lock()
	a.calls = append(a.calls, req.Verb+" "+persona)
	a.mu.Unlock()
	sub["summary_title"] = "Greet ends with an exclamation mark"
	sub["summary_markdown"] = strings.Repeat("The "+persona+" step for BUG-1: Greet(\"Ada\") must return \"Hello, Ada!\". ", 4)
	switch persona {
	case "reproducer":
		sub["bug_verified"] = true
		sub["involved_components"] = []any{map[string]any{"name": "greet.Greet", "reason": "drops the !"}}
	case "proposer":
		if _, done := sub["lessons"]; done {
			sub["summary_title"] = "BUG-1 fixed: Greet exclaims"
			break
		}
		sub["fix_description"] = "Append the exclamation mark the doc comment promises to the greeting."
		sub["root_cause"] = "The concatenation in greet.go stops at the name and never adds the \"!\"."
		sub["affected_files"], sub["confidence"] = []any{"greet.go"}, 0.95
	case "implementer":
		if err := os.WriteFile(filepath.Join(dir, "greet.go"), []byte(fixedGreet), 0o644); err != nil {
			return nil, err
		}
		sub["files_changed"], sub["applied"] = []any{"greet.go"}, true
	case "test_author":
		if err := os.WriteFile(filepath.Join(dir, "greet_test.go"), []byte(greetTest), 0o644); err != nil {
			return nil, err
		}
		sub["status"], sub["tests_added"], sub["tests_run"] = "passed", []any{"greet_test.go"}, map[string]any{"passed": 1}
	case "validator":
		sub["outcome"] = "pass"
	}
	return plugin.Submit(sub)
}

// step runs one intent and checks where the session is.
func step(t *testing.T, s *kitsoki.Session, intent, want string) {
	t.Helper()
	if _, err := s.Turn(context.Background(), intent, nil); err != nil {
		t.Fatalf("%s: %v", intent, err)
	}
	if got := s.State(); got != want {
		t.Fatalf("after %s: state %s, want %s (last_error %v)", intent, got, want, s.World()["last_error"])
	}
}

// A live run of Kitsoki's bugfix story (its open-PR exit) in a temporary
// repository, every handler real and every agent call answered by a
// scripted agent: the worktree is made, the fix and its test are committed
// on the feature branch, the tests and the build run, the diff is read, and
// the story reaches its done exit with the ticket commented and resolved.
func TestBugfixStoryLive(t *testing.T) {
	repo := liveRepo(t, "bugfix", "delivery-tail", "conflict-resolve")
	agent := &bugfixAgent{repo: repo.Dir}
	s, err := kitsoki.Open(filepath.Join(repo.Dir, "stories", "bugfix", "app.yaml"),
		kitsoki.WithSessionID("live1"),
		kitsoki.WithAgent("agent.claude", agent.ask),
		kitsoki.WithWorld(map[string]any{"ticket_id": "BUG-1", "ticket_title": "Greet drops the exclamation mark",
			"thread": "BUG-1", "bugfix_exit": "open-PR", "base_branch": "main"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.State(); got != "reproducing" {
		t.Fatalf("start: state %s (last_error %v)", got, s.World()["last_error"])
	}
	w := s.World()
	workdir, branch := w["workdir"].(string), w["feature_branch"].(string)
	// The story names the worktree and the branch after the ticket and
	// the session (world.session_id, projected from WithSessionID).
	if w["session_id"] != "live1" || w["workspace_id"] != "bf-BUG-1-live1" || branch != "fix/BUG-1-live1" || workdir != ".worktrees/bf-BUG-1-live1" {
		t.Fatalf("per-session names: session_id %v, workspace_id %v, feature_branch %q, workdir %q; want live1, bf-BUG-1-live1, fix/BUG-1-live1, .worktrees/bf-BUG-1-live1",
			w["session_id"], w["workspace_id"], branch, workdir)
	}
	if owner, err := os.ReadFile(filepath.Join(repo.Dir, filepath.FromSlash(gitwt.Owners), "bf-BUG-1-live1.json")); err != nil || !strings.Contains(string(owner), `"session":"live1"`) {
		t.Errorf("the worktree's owner record = %s (%v), want session live1", owner, err)
	}
	wt := filepath.Join(repo.Dir, workdir)
	if got := repo.Git("-C", wt, "branch", "--show-current"); got != branch {
		t.Fatalf("the worktree %s is on %q, want the feature branch %q", workdir, got, branch)
	}
	for _, st := range []string{"proposing", "implementing", "testing", "reviewing", "validating", "done"} {
		step(t, s, "accept", st)
	}
	step(t, s, "accept", "__exit__done")
	if done, exit := s.Done(); !done || exit != "done" {
		t.Errorf("Done() = %v %q", done, exit)
	}
	w = s.World()
	if w["status"] != "fixed" || w["worktree_dirty"] != false {
		t.Errorf("status %v, worktree_dirty %v (%v)", w["status"], w["worktree_dirty"], w["worktree_dirty_files"])
	}

	// The commits are real: the fix, then the test, on the feature branch.
	log := repo.Git("log", "--format=%s", "main.."+branch)
	want := "test: BUG-1 — tests + fix repairs from testing phase\nGreet ends with an exclamation mark"
	if log != want {
		t.Errorf("commits on %s:\n%s\nwant:\n%s", branch, log, want)
	}
	if got := repo.Git("show", branch+":greet.go"); got+"\n" != fixedGreet {
		t.Errorf("the committed greet.go:\n%s", got)
	}
	if files, _ := w["review_changed_files"].([]any); fmt.Sprint(files) != "[greet.go greet_test.go]" {
		t.Errorf("reviewing's diff files: %v", w["review_changed_files"])
	}
	if c, _ := w["fixed_in_commit"].(string); c == "" || !strings.HasPrefix(repo.Git("rev-parse", branch), c) {
		t.Errorf("fixed_in_commit %q is not the branch's head", c)
	}
	ticket, err := os.ReadFile(filepath.Join(repo.Dir, "issues", "bugs", "BUG-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ticket), "status: resolved") || !strings.Contains(string(ticket), "Fixed in:") {
		t.Errorf("the ticket was not commented and resolved:\n%s", ticket)
	}
	// The test run and the build are recorded as checks: the tests on the
	// fix commit (testing ran before the test author's commit), the build
	// on the branch's head.
	fix := repo.Git("rev-parse", branch+"~1")
	if checks := readChecks(t, repo.Dir, fix); checks["tests"]["state"] != "success" || !strings.Contains(fmt.Sprint(checks["tests"]["summary"]), "go test ./...") {
		t.Errorf("checks of the fix commit: %v", checks)
	}
	if checks := readChecks(t, repo.Dir, repo.Git("rev-parse", branch)); checks["build"]["state"] != "success" {
		t.Errorf("checks of the head: %v", checks)
	}
	wantCalls := []string{"task reproducer", "decide proposer", "task implementer", "task test_author", "task validator", "decide proposer"}
	if fmt.Sprint(agent.calls) != fmt.Sprint(wantCalls) {
		t.Errorf("agent calls %v, want %v", agent.calls, wantCalls)
	}
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

// readChecks reads the local forge's checks of commit sha.
func readChecks(t *testing.T, repo, sha string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".kitsoki", "forge", "checks", sha+".json"))
	if err != nil {
		t.Errorf("no checks recorded for %s: %v", sha, err)
		return nil
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A live run of Kitsoki's pr-refinement story on a feature branch whose CI
// failed: the pull request is opened on the local forge, the failing check
// sends it to diagnosis (a scripted diagnoser), the fix is committed and
// pushed by re_push, the new head is green, and the squash merge lands on
// main and on the remote: the story exits merged.
func TestPRRefinementStoryLive(t *testing.T) {
	repo := liveRepo(t, "pr-refinement")
	wt := filepath.Join(repo.Dir, ".worktrees", "pr-1")
	repo.Git("worktree", "add", "-q", "-b", "fix/exclaim", wt, "main")
	if err := os.WriteFile(filepath.Join(wt, "greet_test.go"), []byte(greetTest), 0o644); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, wt, "add", "-A")
	gitfixture.Git(t, wt, "commit", "-qm", "Test that Greet exclaims")
	ws, err := workspace.New(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// CI ran on the branch's head and failed (the fix is not in yet).
	r := ci.New(ci.Config{Workspace: ws}).Invoke(context.Background(), &host.Call{Namespace: "host.local.run_tests", Args: map[string]any{"workdir": ".worktrees/pr-1"}}, "run_tests")
	if r.Err != nil || r.Data["ok"] != false || r.Data["failed"] != int64(1) {
		t.Fatalf("the failing CI run: %v %v", r.Data, r.Err)
	}

	var diagnosed []string
	diagnoser := func(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
		sub, err := scriptagent.Fill(req.Schema)
		if err != nil {
			return nil, err
		}
		args, _ := req.With["args"].(map[string]any)
		diagnosed = append(diagnosed, fmt.Sprint(args["failed_checks"]))
		sub["summary_title"] = "Greet is missing its exclamation mark"
		sub["summary_markdown"] = "TestGreetExclaims fails: Greet returns \"Hello, Ada\" without the \"!\" its doc promises."
		sub["root_cause"], sub["fix_description"] = "greet.go drops the \"!\"", "append \"!\" in Greet"
		return plugin.Submit(sub)
	}
	s, err := kitsoki.Open(filepath.Join(repo.Dir, "stories", "pr-refinement", "app.yaml"),
		kitsoki.WithSessionID("pr1"),
		kitsoki.WithAgent("agent.claude", diagnoser),
		kitsoki.WithWorld(map[string]any{"ticket_id": "BUG-1", "thread": "BUG-1", "workdir": ".worktrees/pr-1",
			"feature_branch": "fix/exclaim", "base_branch": "main", "pr_title": "Greet exclaims", "pr_body": "Closes BUG-1."}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(t, s, "open", "open_pr")
	if w := s.World(); w["pr_id"] != "1" || !strings.HasSuffix(fmt.Sprint(w["pr_url"]), "/.kitsoki/forge/pulls/1.json") {
		t.Errorf("open_pr bound %v %v", w["pr_id"], w["pr_url"])
	}
	step(t, s, "proceed", "ci_monitoring")
	if w := s.World(); w["ci_state"] != "failure" || w["ci_failed_checks"] != "tests" {
		t.Errorf("ci_monitoring read %v %v", w["ci_state"], w["ci_failed_checks"])
	}
	step(t, s, "proceed", "diagnose_executing")
	step(t, s, "proceed", "diagnose_awaiting_reply")
	// The developer applies the diagnosed fix; re_push commits and pushes it.
	if err := os.WriteFile(filepath.Join(wt, "greet.go"), []byte(fixedGreet), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, s, "accept", "re_push")
	head := gitfixture.Git(t, wt, "rev-parse", "HEAD")
	if got := gitfixture.Git(t, wt, "log", "-1", "--format=%s"); got != "Fix: Greet is missing its exclamation mark" {
		t.Errorf("re_push's commit: %q", got)
	}
	if got := repo.Bare("rev-parse", "refs/heads/fix/exclaim"); got != head {
		t.Errorf("the remote's fix/exclaim is %s, want the re-pushed %s", got, head)
	}
	step(t, s, "proceed", "ci_monitoring")
	if w := s.World(); w["ci_state"] != "success" {
		t.Errorf("the new head's CI state: %v", w["ci_state"])
	}
	step(t, s, "proceed", "merge_executing")
	merged := s.World()["merge_sha"]
	step(t, s, "proceed", "merge_awaiting_reply")
	step(t, s, "accept", "__exit__merged")
	if done, exit := s.Done(); !done || exit != "merged" {
		t.Errorf("Done() = %v %q", done, exit)
	}
	if got := repo.Git("rev-parse", "main"); got != merged {
		t.Errorf("main is %s, merge_sha %v", got, merged)
	}
	if got := repo.Bare("rev-parse", "refs/heads/main"); got != merged {
		t.Errorf("the remote's main is %s, want %v", got, merged)
	}
	if got := repo.Git("show", "main:greet.go"); got+"\n" != fixedGreet {
		t.Errorf("main's greet.go:\n%s", got)
	}
	if got := repo.Git("log", "-1", "--format=%s", "main"); got != "Greet exclaims (#1)" {
		t.Errorf("the squash commit: %q", got)
	}
	if fmt.Sprint(diagnosed) != "[tests]" {
		t.Errorf("the diagnoser was asked about %v", diagnosed)
	}
}

// The bugfix story's default exit, direct-ship: after testing, the imported
// delivery tail integrates the branch onto main in the workspace's
// checkout, re-verifies the landing gate on the merged commit, removes the
// worktree, and the story exits shipped with the merged commit.
func TestBugfixStoryDirectShipLive(t *testing.T) {
	repo := liveRepo(t, "bugfix", "delivery-tail", "conflict-resolve")
	agent := &bugfixAgent{repo: repo.Dir}
	s, err := kitsoki.Open(filepath.Join(repo.Dir, "stories", "bugfix", "app.yaml"),
		kitsoki.WithSessionID("ship1"),
		kitsoki.WithAgent("agent.claude", agent.ask),
		kitsoki.WithWorld(map[string]any{"ticket_id": "BUG-1", "ticket_title": "Greet drops the exclamation mark",
			"thread": "BUG-1", "base_branch": "main"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	branch, workdir := s.World()["feature_branch"].(string), s.World()["workdir"].(string)
	for _, st := range []string{"proposing", "implementing", "testing"} {
		step(t, s, "accept", st)
	}
	if _, err := s.Turn(context.Background(), "accept", nil); err != nil {
		t.Fatal(err)
	}
	w := s.World()
	if done, exit := s.Done(); !done || exit != "shipped" {
		t.Fatalf("Done() = %v %q in %s (last_error %v)", done, exit, s.State(), w["last_error"])
	}
	if got := repo.Git("rev-parse", "main"); got != w["shipped_sha"] {
		t.Errorf("main %s, shipped_sha %v", got, w["shipped_sha"])
	}
	if got := repo.Git("show", "main:greet.go"); got+"\n" != fixedGreet {
		t.Errorf("main's greet.go:\n%s", got)
	}
	if got := repo.Git("log", "--format=%s", "main"); !strings.Contains(got, "integrate: "+branch) || !strings.Contains(got, "Greet ends with an exclamation mark") {
		t.Errorf("main's history:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, workdir)); !os.IsNotExist(err) {
		t.Errorf("the worktree %s was not cleaned up: %v", workdir, err)
	}
}
