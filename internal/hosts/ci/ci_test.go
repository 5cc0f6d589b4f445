package ci

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/forge"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	"github.com/kitsoki/kitsoki/internal/testsupport/gitfixture"
)

const goMod = "module example.com/demo\n\ngo 1.21\n"

const passing = `package demo

import "testing"

func TestA(t *testing.T) {}
func TestB(t *testing.T) { t.Run("sub", func(t *testing.T) {}) }
`

const failing = `package demo

import "testing"

func TestC(t *testing.T) { t.Fatal("c is broken") }
`

// goEnv keeps the machine's Go build cache (the fixture gives git a fresh
// HOME, which would otherwise mean a cold cache and a full standard library
// build) and stops toolchain downloads.
func goEnv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Setenv("GOCACHE", lines[0])
	t.Setenv("GOMODCACHE", lines[1])
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOFLAGS", "-mod=mod")
}

func newHandler(t *testing.T, dir string) *Handler {
	t.Helper()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Workspace: ws, Clock: clock.NewFake(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))})
}

func invoke(hd *Handler, op string, args map[string]any) *host.Result {
	return hd.Invoke(context.Background(), &host.Call{Namespace: Name + "." + op, Args: args}, op)
}

// go test in a Go project: counted from go test -json, the log as go
// test's text, ok false and the log (not an error) when a test fails, and
// each run recorded as a check of HEAD on the local forge.
func TestRunTestsGo(t *testing.T) {
	goEnv(t)
	repo := gitfixture.New(t, map[string]string{"go.mod": goMod, "a_test.go": passing})
	goEnv(t)
	hd := newHandler(t, repo.Dir)

	r := invoke(hd, "run_tests", map[string]any{})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	d := r.Data
	if d["ok"] != true || d["state"] != "success" || d["passed"] != int64(3) || d["failed"] != int64(0) || d["command"] != "go test ./..." {
		t.Errorf("passing run = ok %v state %v passed %v failed %v command %v", d["ok"], d["state"], d["passed"], d["failed"], d["command"])
	}
	if log := d["log"].(string); !strings.Contains(log, "--- PASS: TestA") || strings.Contains(log, `"Action"`) {
		t.Errorf("the log is not go test's text:\n%s", log)
	}

	repo.Write(map[string]string{"c_test.go": failing})
	r = invoke(hd, "run_tests", map[string]any{"test_cmd": ""})
	if r.Err != nil {
		t.Fatalf("a failing test is not an error of the call: %v", r.Err)
	}
	d = r.Data
	if d["ok"] != false || d["state"] != "failure" || d["failed"] != int64(1) || d["passed"] != int64(3) || d["exit_code"] != int64(1) {
		t.Errorf("failing run = ok %v state %v passed %v failed %v exit %v", d["ok"], d["state"], d["passed"], d["failed"], d["exit_code"])
	}
	if log := d["log"].(string); !strings.Contains(log, "--- FAIL: TestC") || !strings.Contains(log, "c is broken") {
		t.Errorf("the failing test's output is not in the log:\n%s", log)
	}

	checks := recorded(t, repo.Dir, repo.Git("rev-parse", "HEAD"))
	if len(checks) != 1 || checks[0].Name != "tests" || checks[0].State != "failure" || !checks[0].Dirty ||
		checks[0].Summary != "3 passed, 1 failed (go test ./...)" {
		t.Errorf("recorded checks = %+v", checks)
	}

	b := invoke(hd, "build", map[string]any{})
	if b.Err != nil || b.Data["ok"] != true || b.Data["command"] != "go build ./..." {
		t.Errorf("build = %v, %v", b.Data, b.Err)
	}
	repo.Write(map[string]string{"bad.go": "package demo\nfunc broken( {\n"})
	b = invoke(hd, "build", map[string]any{"build_cmd": "go build ./..."})
	if b.Err != nil || b.Data["ok"] != false || !strings.Contains(b.Data["log"].(string), "bad.go") {
		t.Errorf("broken build = %v, %v", b.Data, b.Err)
	}
}

func recorded(t *testing.T, dir, sha string) []forge.Check {
	t.Helper()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := forge.NewLocal(forge.Env{FS: hostfs.New(ws), Clock: clock.System{}}).ChecksFor(sha)
	if err != nil {
		t.Fatal(err)
	}
	return checks
}

// The output shapes the counts are read from.
func TestCounts(t *testing.T) {
	dir := t.TempDir()
	report := `<?xml version="1.0"?><testsuites><testsuite name="a" tests="5" failures="1" errors="1" skipped="1"></testsuite></testsuites>`
	if err := os.WriteFile(filepath.Join(dir, "report.xml"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	hd := newHandler(t, dir)
	tests := []struct {
		name, out, junit string
		passed, failed   int64
		skipped          int64
		counted          bool
	}{
		{"go -v", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n    --- PASS: TestA/x (0.00s)\n--- FAIL: TestB (0.00s)\n--- SKIP: TestC (0.00s)\nFAIL\n", "", 2, 1, 1, true},
		{"go -json", `{"Action":"pass","Test":"TestA"}` + "\n" + `{"Action":"fail","Test":"TestB"}` + "\n" + `{"Action":"fail","Package":"p"}` + "\n", "", 1, 1, 0, true},
		{"tap", "ok 1 - a\nnot ok 2 - b\n# tests 3\n# pass 2\n# fail 1\n# skip 0\n", "", 2, 1, 0, true},
		{"cargo", "test result: ok. 4 passed; 0 failed; 1 ignored; 0 measured\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured\n", "", 5, 2, 1, true},
		{"pytest", "==== 3 passed, 1 failed, 2 skipped in 0.12s ====\n", "", 3, 1, 2, true},
		{"jest", "Tests:       1 failed, 4 passed, 5 total\n", "", 4, 1, 0, true},
		{"junit file", "ran\n", "report.xml", 2, 2, 1, true},
		{"junit inline", `<testsuite tests="3"><testcase name="a"/><testcase name="b"><failure/></testcase><testcase name="c"/></testsuite>` + "\n", "", 2, 1, 0, true},
		{"unknown", "all good\n", "", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"test_cmd": "printf '%s' " + quote(tt.out)}
			if tt.junit != "" {
				args["junit"] = tt.junit
			}
			r := invoke(hd, "run_tests", args)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			_, counted := r.Data["passed"]
			if counted != tt.counted {
				t.Fatalf("counted %v, want %v (data %v)", counted, tt.counted, r.Data)
			}
			if !counted {
				return
			}
			if r.Data["passed"] != tt.passed || r.Data["failed"] != tt.failed || r.Data["skipped"] != tt.skipped {
				t.Errorf("passed %v failed %v skipped %v, want %d %d %d", r.Data["passed"], r.Data["failed"], r.Data["skipped"], tt.passed, tt.failed, tt.skipped)
			}
			if r.Data["ok"] != (tt.failed == 0) {
				t.Errorf("ok %v with %d failed", r.Data["ok"], tt.failed)
			}
		})
	}
}

// The command comes from with.test_cmd, then git config kitsoki.ci.test,
// then the project's files; target is appended as one argument.
func TestCommandChoice(t *testing.T) {
	repo := gitfixture.New(t, map[string]string{"Makefile": "test:\n\t@echo made\n"})
	hd := newHandler(t, repo.Dir)
	if d := invoke(hd, "run_tests", map[string]any{}).Data; d["command"] != "make test" || !strings.Contains(d["log"].(string), "made") {
		t.Errorf("detected: %v", d)
	}
	repo.Git("config", "kitsoki.ci.test", "echo configured")
	if d := invoke(hd, "run_tests", map[string]any{"target": "x y"}).Data; d["command"] != "echo configured 'x y'" || d["log"] != "configured x y\n" {
		t.Errorf("configured: %v", d)
	}
	if d := invoke(hd, "run_tests", map[string]any{"test_cmd": "echo given"}).Data; d["command"] != "echo given" {
		t.Errorf("given: %v", d)
	}
	b := invoke(hd, "build", map[string]any{})
	if b.Err != nil || b.Data["ok"] != true || b.Data["skipped_run"] != true || !strings.Contains(b.Data["log"].(string), "no build command") {
		t.Errorf("nothing to build = %v, %v", b.Data, b.Err)
	}
}

func TestErrors(t *testing.T) {
	repo := gitfixture.New(t, nil)
	hd := newHandler(t, repo.Dir)
	tests := []struct {
		op   string
		args map[string]any
		want string
	}{
		{"run_tests", map[string]any{"workdir": "../.."}, `host.local.run_tests: with.workdir "../.." is outside the workspace`},
		{"run_tests", map[string]any{}, "host.local.run_tests: no test command for " + repo.Dir + ": give with.test_cmd, set one with git config kitsoki.ci.test"},
		{"run_tests", map[string]any{"test_cmd": "true", "timeout": "soon"}, "with.timeout:"},
		{"run_tests", map[string]any{"tests": "x"}, "with.tests is not a field of host.local.run_tests"},
		{"build", map[string]any{"workdir": "nope"}, `with.workdir "nope" does not exist`},
		{"remote_status", map[string]any{}, "with.pr_id is required"},
		{"remote_status", map[string]any{"pr_id": "3"}, `no pull request "3" on the local forge`},
	}
	for _, tt := range tests {
		r := invoke(hd, tt.op, tt.args)
		if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) || r.Data["ok"] != false {
			t.Errorf("%s %v: error %v (ok %v), want it to contain %q", tt.op, tt.args, r.Err, r.Data["ok"], tt.want)
		}
	}
}

// The timeout stops the command and is an error of the call.
func TestTimeout(t *testing.T) {
	repo := gitfixture.New(t, nil)
	ws, _ := workspace.New(repo.Dir)
	fake := clock.NewFake(time.Unix(0, 0))
	hd := New(Config{Workspace: ws, Clock: fake})
	done := make(chan *host.Result)
	go func() {
		done <- invoke(hd, "run_tests", map[string]any{"test_cmd": "echo started > started; sleep 300", "timeout": "5s"})
	}()
	for {
		if _, err := os.Stat(filepath.Join(repo.Dir, "started")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fake.Advance(5 * time.Second)
	r := <-done
	if r.Err == nil || !strings.Contains(r.Err.Error(), "host.local.run_tests: command timed out after 5s (with.timeout)") || r.Data["ok"] != false {
		t.Errorf("timeout: %v %v", r.Err, r.Data)
	}
}

// remote_status reads the checks run_tests recorded for a pull request's
// head on the local forge.
func TestRemoteStatus(t *testing.T) {
	repo := gitfixture.New(t, nil)
	repo.Git("switch", "-q", "-c", "fix/a")
	repo.Write(map[string]string{"x.txt": "x\n"})
	repo.Git("add", "-A")
	repo.Git("commit", "-qm", "x")
	ws, _ := workspace.New(repo.Dir)
	g := gitrepo.Tool(ws, nil)
	r, err := gitrepo.Open(context.Background(), g, repo.Dir, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	local := forge.NewLocal(forge.Env{FS: hostfs.New(ws), Clock: clock.System{}, Repo: r, Git: g})
	pr, _, err := local.Open(context.Background(), r, forge.OpenRequest{Title: "x", Base: "main", Head: "fix/a"})
	if err != nil {
		t.Fatal(err)
	}
	hd := newHandler(t, repo.Dir)
	if s := invoke(hd, "remote_status", map[string]any{"pr_id": pr.ID}).Data; s["state"] != "success" || s["checks"] != "" {
		t.Errorf("no checks yet: %v", s)
	}
	invoke(hd, "run_tests", map[string]any{"test_cmd": "echo '--- FAIL: TestX (0.00s)'; exit 1"})
	s := invoke(hd, "remote_status", map[string]any{"pr_id": pr.ID}).Data
	if s["state"] != "failure" || s["checks"] != "tests" || s["head_sha"] != repo.Git("rev-parse", "HEAD") {
		t.Errorf("after a failing run: %v", s)
	}
}

// with.max_output caps the log the call returns (truncated true), while the
// counts are read from all of the output.
func TestMaxOutputCapsTheLogNotTheCounts(t *testing.T) {
	hd := newHandler(t, t.TempDir())
	cmd := "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"--- PASS: Test$i (0.00s)\"; done; echo '--- FAIL: TestLast (0.00s)'; exit 1"
	r := invoke(hd, "run_tests", map[string]any{"test_cmd": cmd, "max_output": 40})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	d := r.Data
	if log := d["log"].(string); log != "--- PASS: Test1 (0.00s)\n--- PASS: Test2 " {
		t.Errorf("log %q, want the first 40 bytes of the output", log)
	}
	if d["truncated"] != true || d["passed"] != int64(10) || d["failed"] != int64(1) || d["ok"] != false {
		t.Errorf("truncated %v passed %v failed %v ok %v, want true 10 1 false", d["truncated"], d["passed"], d["failed"], d["ok"])
	}
	full := invoke(hd, "run_tests", map[string]any{"test_cmd": "echo short"}).Data
	if full["truncated"] != false || full["log"] != "short\n" {
		t.Errorf("an output under the cap: truncated %v log %q", full["truncated"], full["log"])
	}
	for _, bad := range []any{0, -5, "lots"} {
		r := invoke(hd, "run_tests", map[string]any{"test_cmd": "true", "max_output": bad})
		if r.Err == nil || !strings.Contains(r.Err.Error(), "with.max_output must be a positive whole number of bytes") {
			t.Errorf("max_output %v: %v", bad, r.Err)
		}
	}
}

// On a repository whose forge is GitHub (git config kitsoki.forge github)
// remote_status reads the pull request's checks through gh, and a test run
// records no check on the local forge (the repository's CI is GitHub's).
func TestRemoteStatusOnGitHub(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "vcs", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_GH_LOG", filepath.Join(tmp, "gh.log"))
	t.Setenv("FAKE_GH_STATE", filepath.Join(tmp, "state"))
	repo := gitfixture.New(t, nil)
	repo.Git("config", forge.Setting, forge.KindGitHub)
	hd := newHandler(t, repo.Dir)

	s := invoke(hd, "remote_status", map[string]any{"pr_id": "7"})
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	if s.Data["state"] != "failure" || s.Data["checks"] != "lint" || s.Data["head_sha"] != "f00d" || s.Data["pr_state"] != "open" ||
		s.Data["url"] != "https://github.com/acme/widgets/pull/7" || len(s.Data["check_runs"].([]any)) != 3 {
		t.Errorf("remote_status on GitHub = %v", s.Data)
	}
	if log, _ := os.ReadFile(filepath.Join(tmp, "gh.log")); !strings.Contains(string(log), "pr view 7 --json ") {
		t.Errorf("gh was not asked for the pull request: %s", log)
	}

	r := invoke(hd, "run_tests", map[string]any{"test_cmd": "echo '--- PASS: TestX (0.00s)'"})
	if r.Err != nil || r.Data["ok"] != true {
		t.Fatalf("run_tests: %v %v", r.Data, r.Err)
	}
	if checks := recorded(t, repo.Dir, repo.Git("rev-parse", "HEAD")); len(checks) != 0 {
		t.Errorf("a GitHub repository's test run was recorded on the local forge: %+v", checks)
	}
}
