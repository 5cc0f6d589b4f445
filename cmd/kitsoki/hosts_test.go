//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostrunWorkspace copies testdata/hostrun into a fresh directory, the
// workspace of the runs (it holds no .git, so the story's directory is).
func hostrunWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"app.yaml", "secret.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "hostrun", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHostRunRealRuns runs kitsoki run on a story whose states call
// host.run and the artifact handlers for real.
func TestHostRunRealRuns(t *testing.T) {
	tests := []struct {
		name    string
		intents string
		world   string
		code    int
		stdout  string
		stderr  string
	}{
		{"output bound into the world", "echo,done", "text=hello world", exitOK, "out=[hello world] code=0", ""},
		{"templated shell syntax is one argument", "echo,done", "text=x; rm -rf app.yaml; touch pwned", exitOK,
			"out=[x; rm -rf app.yaml; touch pwned] code=0", ""},
		{"stdout_json bound", "json,done", "", exitOK, "n=3", ""},
		{"fail_on_error fires on_error", "fails,done", "", exitOK,
			"failed: host.run: command ended with exit status 3 (with.fail_on_error is set) (code=3, out=[nope\n])",
			"host error: host.run: command ended with exit status 3 (with.fail_on_error is set) — on_error → failed"},
		{"cwd outside the workspace refused", "escape,done", "", exitOK,
			`failed: host.run: with.cwd "../.." is outside the workspace`, `(widen the workspace with --workspace DIR) — on_error → failed`},
		{"output capped", "big,done", "", exitOK, "out=[" + strings.Repeat("a", 100) + "] code=0 n=0 truncated=true", ""},
		{"artifacts written and listed", "note,done", "text=all good", exitOK, "names=[data.json,report.md (2)]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := hostrunWorkspace(t)
			args := []string{"run", filepath.Join(ws, "app.yaml"), "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", tt.intents}
			if tt.world != "" {
				args = append(args, "--world", tt.world)
			}
			code, out, errs := runCLI(t, "", args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if !strings.Contains(errs, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errs)
			}
			if _, err := os.Stat(filepath.Join(ws, "pwned")); !errors.Is(err, os.ErrNotExist) {
				t.Error("pwned exists: a templated argument ran as shell syntax")
			}
			if _, err := os.Stat(filepath.Join(ws, "app.yaml")); err != nil {
				t.Errorf("app.yaml removed: %v", err)
			}
		})
	}
}

func TestHostRunArtifactFiles(t *testing.T) {
	ws := hostrunWorkspace(t)
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--world", "text=all good", "--intents", "note,done")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	sessions, err := os.ReadDir(filepath.Join(ws, ".kitsoki", "artifacts"))
	if err != nil || len(sessions) != 1 {
		t.Fatalf("session directories = %v, %v; want one", sessions, err)
	}
	if !strings.Contains(errs, "session "+sessions[0].Name()) {
		t.Errorf("artifact directory %s is not named after the session:\n%s", sessions[0].Name(), errs)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".kitsoki", "artifacts", sessions[0].Name(), "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "### Report\n\nall good\n"; got != want {
		t.Errorf("report.md = %q, want %q", got, want)
	}
}

// TestHostRunTimeoutKillsProcessGroup: a shell that started a sleeping
// grandchild outlives its timeout; the whole group is stopped.
func TestHostRunTimeoutKillsProcessGroup(t *testing.T) {
	ws := hostrunWorkspace(t)
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--intents", "slow,done")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "failed: host.run: command timed out after 1s (with.timeout); its process group was stopped (signal: terminated)"
	if !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	b, err := os.ReadFile(filepath.Join(ws, "grandchild.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		if processGone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("grandchild %d still runs after the timeout", pid)
}

// processGone reports whether pid no longer runs (absent, or a zombie not
// yet reaped by whoever inherited it).
func processGone(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestHostRunEnvSecretMasked(t *testing.T) {
	const secret = "hostrun-secret-value-42"
	t.Setenv("KITSOKI_HOSTRUN_TEST_TOKEN", secret)
	ws := hostrunWorkspace(t)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "secret.yaml"), "--trace", tr, "--intents", "show,done")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(out, secret) {
		t.Errorf("the env secret is written unmasked:\ntrace:\n%s\nstdout:\n%s", b, out)
	}
	if !strings.Contains(string(b), `"TOKEN":"REDACTED"`) || !strings.Contains(string(b), `"stdout":"REDACTED\n"`) {
		t.Errorf("trace lacks the masked env value and output:\n%s", b)
	}
}

func TestUnbuiltHandlerRefusedAtLoad(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	src := "app: {id: slides}\nroot: a\nstates:\n  a:\n    on_enter:\n      - invoke: host.slidey.render\n        with: {spec: x}\n"
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "run", app, "--trace", filepath.Join(dir, "t.jsonl"))
	if code != exitLoad {
		t.Fatalf("exit %d, want %d\n%s", code, exitLoad, errs)
	}
	want := `app.yaml:6:17: states.a.on_enter[0].invoke: state "a": on_enter invoke "host.slidey.render": kitsoki does not provide host.slidey (it needs slidey); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`
	if !strings.Contains(errs, want) {
		t.Errorf("stderr lacks\n%s\ngot:\n%s", want, errs)
	}
	// A flow may stub it: under test flows the story loads and the stub
	// answers.
	if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	flow := "test_kind: flow\nhost_handlers:\n  host.slidey.render: {data: {url: deck.html}}\nturns: []\n"
	if err := os.WriteFile(filepath.Join(dir, "flows", "stubbed.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "", "test", "flows", app); code != exitOK {
		t.Errorf("test flows with a stub: exit %d, want 0\n%s\n%s", code, out, errs)
	}
}

func TestHostsListing(t *testing.T) {
	code, out, errs := runCLI(t, "", "hosts")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"host.run  Run a program with arguments (argv mode, no shell) or a bash command, inside the workspace.\n",
		"    max_output     int       bytes of output kept (default 1048576)",
		"    truncated                bool    output went past max_output and was cut",
		"host.artifacts_dir.list",
		"host.append_to_file",
		"  host.jira, host.jira.*",
		"  host.slidey, host.slidey.*",
		"  host.cypilot_artifacts, host.cypilot_artifacts.*",
		"host.starlark.run  Run a Starlark script's main(ctx)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kitsoki hosts lacks %q:\n%s", want, out)
		}
	}
	// The handlers of the vcs, ci, chat and IDE families and the GitHub
	// and workspace-manager ones are listed with their fields and results,
	// and are no longer among the refused. Each is named here, so one
	// missing from the catalog (which the loop below walks) fails too.
	var required []string
	for _, op := range []string{"branch", "diff", "commit", "push", "open_pr", "pr_status", "pr_comment", "merge"} {
		required = append(required, "host.git."+op, "host.github."+op)
	}
	for _, op := range []string{"run_tests", "build", "remote_status"} {
		required = append(required, "host.local."+op)
	}
	for _, op := range []string{"create", "resolve", "drive", "transcript", "fork", "rename", "archive", "list", "suggest_title", "resolve_ref"} {
		required = append(required, "host.chat."+op)
	}
	for _, op := range []string{"open_file", "open_diff", "get_selection", "get_open_editors", "get_diagnostics"} {
		required = append(required, "host.ide."+op)
	}
	for _, op := range []string{"create", "search", "get", "comment", "transition", "list_mine"} {
		required = append(required, "host.gh.ticket."+op)
	}
	required = append(required, "host.git", "host.github", "host.local", "host.gh.ticket", "host.workspace_manager.get")
	for _, name := range required {
		if !strings.Contains(out, "\n"+name+"  ") {
			t.Errorf("kitsoki hosts does not list %s", name)
		}
	}
	for _, spec := range catalog.Builtins() {
		for _, prefix := range []string{"host.git.", "host.github.", "host.local.", "host.chat.", "host.ide.", "host.gh.ticket", "host.workspace_manager."} {
			if !strings.HasPrefix(spec.Name, prefix) {
				continue
			}
			if !strings.Contains(out, spec.Name+"  "+spec.Summary+"\n") {
				t.Errorf("kitsoki hosts lacks the line of %s", spec.Name)
			}
			if len(spec.Results) == 0 {
				t.Errorf("%s lists no results", spec.Name)
			}
		}
	}
	for _, want := range []string{
		"    stage_all  bool    commit every change, untracked files included",
		"    checks           string  the names of the failing checks, comma-separated",
		"    new_text_path  string  a file inside the workspace holding it (give one of the two)",
		"    payload          string  required; the user's message of the turn",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kitsoki hosts lacks the field line %q", want)
		}
	}
	for _, gone := range []string{"  host.git, host.git.*", "  host.local, host.local.*", "  host.ide, host.ide.*", "needs the IDE link"} {
		if strings.Contains(out, gone) {
			t.Errorf("kitsoki hosts still refuses %q", gone)
		}
	}
	if code, _, _ := runCLI(t, "", "hosts", "host.run", "extra"); code != exitUsage {
		t.Errorf("kitsoki hosts host.run extra: exit %d, want %d", code, exitUsage)
	}
}

// SIGTERM to kitsoki while host.run runs a command stops the command's
// whole process group before kitsoki exits: the grandchild it left in the
// background does not outlive the run.
func TestHostRunGroupStoppedWhenKitsokiIsSignalled(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app.yaml"), `app: {id: sigterm}
hosts: [host.run]
root: a
states:
  a:
    on_enter:
      - invoke: host.run
        with: {cmd: "sleep 300 & echo $! > grandchild.pid; wait", timeout: 10m}
    terminal: true
`)
	cmd := kitsokiChild(t, dir, "run", "app.yaml", "--workspace", dir, "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "grandchild.pid")
	pid := 0
	for i := 0; pid == 0; i++ {
		if i == 3000 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no grandchild.pid after 30 s; stderr:\n%s", stderr.String())
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == exitOK {
		t.Errorf("kitsoki after SIGTERM: %v, want a non-zero exit; stderr:\n%s", err, stderr.String())
	}
	for range 500 {
		if processGone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("grandchild %d still runs after kitsoki exited; stderr:\n%s", pid, stderr.String())
}

// Free text spliced into a shell-mode host.run command is data, never
// shell syntax: each {{ }} is quoted for where it lands, so the command
// prints the text four times and nothing else runs.
func TestHostRunShellModeQuotesSplicedValues(t *testing.T) {
	for _, say := range []string{
		"hello; touch pwned",
		`it's "quoted" $(touch pwned) ` + "`touch pwned`" + ` \ end`,
		"two  spaces\ttab",
	} {
		ws := hostrunWorkspace(t)
		code, out, errs := runCLI(t, "", "run", filepath.Join(ws, "app.yaml"), "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
			"--say", say)
		if code != exitIncomplete { // the story stays in idle
			t.Fatalf("--say %q: exit %d\nstdout:\n%s\nstderr:\n%s", say, code, out, errs)
		}
		if want := "out=[" + strings.Repeat("["+say+"]", 4) + "] code=0"; !strings.Contains(out, want) {
			t.Errorf("--say %q: stdout lacks %q:\n%s", say, want, out)
		}
		if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
			t.Errorf("--say %q ran an injected command: %s/pwned exists", say, ws)
		}
	}
}
