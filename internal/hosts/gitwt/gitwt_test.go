package gitwt

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeop"
)

// newRepo makes a git repository with one commit on main and returns its
// workspace; it skips when git is not installed.
func newRepo(t *testing.T) workspace.Root {
	t.Helper()
	if _, err := exec.LookPath(Git); err != nil {
		t.Skip("git is not installed: the git handlers need it")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "add", ".")
	run(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Git, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func call(session string, args map[string]any) *host.Call {
	return &host.Call{SessionID: session, Args: args}
}

func errText(r *host.Result) string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Error()
}

// TestWorktreeErrors: every refused call, op by op, with its message.
func TestWorktreeErrors(t *testing.T) {
	ws := newRepo(t)
	w := NewWorktrees(Config{Workspace: ws})
	tests := []struct {
		op   string
		args map[string]any
		want string
	}{
		{"create", map[string]any{}, "host.git_worktree.create: with.name is required: the branch the worktree checks out"},
		{"create", map[string]any{"name": "--force"}, `host.git_worktree.create: with.name "--force" starts with '-': git would read it as an option; name a branch, commit or path`},
		{"create", map[string]any{"name": "a..b"}, `host.git_worktree.create: with.name "a..b" is not a valid branch name`},
		{"create", map[string]any{"name": "x", "base": "-b"}, `host.git_worktree.create: with.base "-b" starts with '-'`},
		{"create", map[string]any{"name": "x", "id": "../../.."}, `host.git_worktree.create: with.id "../../.." has no usable name`},
		{"create", map[string]any{"name": "x", "session_id": "other"}, `host.git_worktree.create: with.session_id "other" is not this run's session "s": a worktree belongs to the session that creates it`},
		{"create", map[string]any{"name": "x", "workdir": "y"}, "host.git_worktree.create: with.workdir is not a field of host.git_worktree.create (fields: name, id, base, session_id)"},
		{"create", map[string]any{"name": 3}, "host.git_worktree.create: with.name must be a string, got int"},
		{"get", map[string]any{}, "host.git_worktree.get: with.id is required"},
		{"get", map[string]any{"id": "nope"}, `host.git_worktree.get: no worktree "nope" (` + filepath.Join(ws.Dir(), ".worktrees", "nope") + `): create it first with host.git_worktree.create`},
		{"sync", map[string]any{"id": "nope"}, `host.git_worktree.sync: no worktree "nope"`},
		{"cleanup_scan", map[string]any{"base": "nobranch"}, `host.git_worktree.cleanup_scan: with.base "nobranch" is not a branch or commit of the repository`},
		{"cleanup_apply", map[string]any{}, "host.git_worktree.cleanup_apply: with.candidates is required: the list cleanup_scan returned"},
		{"cleanup_apply", map[string]any{"candidates": "x"}, "host.git_worktree.cleanup_apply: with.candidates must be a list (cleanup_scan's candidates), got string"},
	}
	for _, tt := range tests {
		t.Run(tt.op+"/"+tt.want, func(t *testing.T) {
			r := w.Invoke(context.Background(), call("s", tt.args), tt.op)
			if got := errText(r); !strings.HasPrefix(got, tt.want) {
				t.Errorf("error\n got %q\nwant %q…", got, tt.want)
			}
			if r.Data["ok"] != false {
				t.Errorf("ok = %v, want false", r.Data["ok"])
			}
		})
	}
}

// TestWorktreeLifecycle: create, idempotent create, get, list, sync, a
// second session refused the same branch, scan and apply.
func TestWorktreeLifecycle(t *testing.T) {
	ws := newRepo(t)
	ctx := context.Background()
	w := NewWorktrees(Config{Workspace: ws})
	dir := filepath.Join(ws.Dir(), ".worktrees", "fix-a")

	r := w.Invoke(ctx, call("s1", map[string]any{"name": "fix/a", "base": "main"}), "create")
	want := map[string]any{"ok": true, "id": "fix-a", "path": dir, "branch": "fix/a", "created": true}
	if diff := cmp.Diff(want, r.Data); diff != "" || r.Err != nil {
		t.Fatalf("create (-want +got):\n%s%v", diff, r.Err)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"name": "fix/a"}), "create")
	want["created"] = false
	if diff := cmp.Diff(want, r.Data); diff != "" || r.Err != nil {
		t.Fatalf("second create (-want +got):\n%s%v", diff, r.Err)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"name": "fix/b", "id": "fix-a"}), "create")
	if got := errText(r); !strings.Contains(got, `already exists on branch "fix/a", not "fix/b": use another with.id`) {
		t.Errorf("create over another branch: %q", got)
	}
	// Another session is not handed the first one's worktree, nor can it
	// check out the branch the first one has.
	r = w.Invoke(ctx, call("s2", map[string]any{"name": "fix/a"}), "create")
	if got, want := errText(r), `host.git_worktree.create: worktree "fix-a" (`+dir+`) is checked out by session s1; refusing to share it with this one: use another with.id (e.g. one naming the session)`; got != want {
		t.Errorf("second session on the same worktree:\n got %q\nwant %q", got, want)
	}
	r = w.Invoke(ctx, call("s2", map[string]any{"id": "fix-a"}), "get")
	if got := errText(r); !strings.Contains(got, "is checked out by session s1") {
		t.Errorf("second session's get: %q", got)
	}
	r = w.Invoke(ctx, call("s2", map[string]any{"name": "fix/a", "id": "other"}), "create")
	if got := errText(r); !strings.Contains(got, "git worktree add") || !strings.Contains(got, "fix/a") {
		t.Errorf("second session on the same branch: %q", got)
	}

	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"id": "fix-a"}), "get")
	if diff := cmp.Diff(map[string]any{"ok": true, "id": "fix-a", "path": dir, "branch": "fix/a", "dirty": true}, r.Data); diff != "" {
		t.Errorf("get (-want +got):\n%s%v", diff, r.Err)
	}
	r = w.Invoke(ctx, call("s1", nil), "list")
	wantList := []any{
		map[string]any{"id": filepath.Base(ws.Dir()), "path": ws.Dir(), "branch": "main", "dirty": false, "session": ""},
		map[string]any{"id": "fix-a", "path": dir, "branch": "fix/a", "dirty": true, "session": "s1"},
	}
	if diff := cmp.Diff(wantList, r.Data["workspaces"]); diff != "" {
		t.Errorf("list (-want +got):\n%s%v", diff, r.Err)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"id": "fix-a"}), "sync")
	if r.Err != nil || r.Data["log"] != "fix/a has no upstream branch; nothing to sync" {
		t.Errorf("sync without upstream: %v %v", r.Data, r.Err)
	}
	// With a local upstream, sync fast-forwards.
	run(t, ws.Dir(), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "ahead")
	run(t, dir, "branch", "--set-upstream-to=main")
	r = w.Invoke(ctx, call("s1", map[string]any{"id": "fix-a"}), "sync")
	if r.Err != nil || !strings.Contains(r.Data["log"].(string), "Fast-forward") {
		t.Errorf("sync with upstream: %v %v", r.Data, r.Err)
	}

	// Dirty: not recommended; clean and merged: recommended, removed.
	r = w.Invoke(ctx, call("s1", map[string]any{"base": "main"}), "cleanup_scan")
	cands, _ := r.Data["candidates"].([]any)
	if r.Err != nil || len(cands) != 1 || cands[0].(map[string]any)["reason"] != "the worktree has uncommitted changes" || r.Data["recommended_count"] != int64(0) {
		t.Fatalf("scan of a dirty worktree: %v %v", r.Data, r.Err)
	}
	if err := os.Remove(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatal(err)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"protected": "fix/a"}), "cleanup_scan")
	if c := r.Data["candidates"].([]any)[0].(map[string]any); c["reason"] != "branch is protected" || r.Data["base"] != "main" {
		t.Errorf("protected: %v", r.Data)
	}
	r = w.Invoke(ctx, call("s1", map[string]any{"exclude": "fix"}), "cleanup_scan")
	if c := r.Data["candidates"].([]any)[0].(map[string]any); c["reason"] != `matches the exclude filter "fix"` {
		t.Errorf("exclude: %v", r.Data)
	}
	r = w.Invoke(ctx, call("s1", nil), "cleanup_scan")
	wantCand := map[string]any{"kind": "worktree", "id": "fix-a", "path": dir, "branch": "fix/a", "base": "main", "merged": true,
		"dirty": false, "recommended": true, "reason": "branch is merged into main", "actions": []any{"worktree_remove", "branch_delete"}}
	if diff := cmp.Diff([]any{wantCand}, r.Data["candidates"]); diff != "" || r.Data["recommended_count"] != int64(1) {
		t.Fatalf("scan (-want +got):\n%s", diff)
	}
	outside := map[string]any{"recommended": true, "path": ws.Dir(), "branch": "main"}
	skip := map[string]any{"recommended": false, "path": "/x", "branch": "keep"}
	r = w.Invoke(ctx, call("s1", map[string]any{"candidates": []any{wantCand, outside, skip}}), "cleanup_apply")
	if got := errText(r); got != "host.git_worktree.cleanup_apply: 1 of 2 recommended candidates were not removed (see errors)" {
		t.Errorf("apply error: %q", got)
	}
	if diff := cmp.Diff([]any{map[string]any{"branch": "fix/a", "path": dir}}, r.Data["deleted"]); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{map[string]any{"branch": "keep", "path": "/x", "reason": "not recommended"}}, r.Data["skipped"]); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if errs := r.Data["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["error"].(string), "is not a worktree kitsoki created") {
		t.Errorf("errors: %v", errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if got := run(t, ws.Dir(), "branch", "--list", "fix/a"); got != "" {
		t.Errorf("branch still there: %q", got)
	}
}

// TestRegisterOpForm: host.git_worktree takes with.op, and refuses a
// missing or unknown one.
func TestRegisterOpForm(t *testing.T) {
	ws := newRepo(t)
	h := host.New(&story.Story{}, nil, nil)
	Register(h, Config{Workspace: ws})
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "host.git_worktree: with.op is required: one of list, get, create, sync, cleanup_scan, cleanup_apply (or invoke host.git_worktree.<op>)"},
		{map[string]any{"op": "remove"}, `host.git_worktree: with.op "remove" is not an operation (operations: list, get, create, sync, cleanup_scan, cleanup_apply)`},
		{map[string]any{"op": "list"}, ""},
	} {
		r, err := h.Dispatch(context.Background(), &host.Call{Namespace: WorktreeName, Args: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		if got := errText(r); got != tt.want {
			t.Errorf("%v: error %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestNoRepo: a workspace outside any git work tree is named as such.
func TestNoRepo(t *testing.T) {
	if _, err := exec.LookPath(Git); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := NewWorktrees(Config{Workspace: ws}).Invoke(context.Background(), call("s", nil), "list")
	want := "host.git_worktree.list: the workspace " + ws.Dir() + " is not inside a git work tree (fatal: not a git repository"
	if got := errText(r); !strings.HasPrefix(got, want) {
		t.Errorf("error\n got %q\nwant %q…", got, want)
	}
}

// TestNoGit: git missing from PATH is named as such.
func TestNoGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := NewWorktrees(Config{Workspace: ws}).Invoke(context.Background(), call("s", nil), "list")
	if got, want := errText(r), "host.git_worktree.list: git is not installed (not found in $PATH): install git, or remove the call"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// TestDiffOpen: the diff is printed and returned; without an output the
// surface is none; paths outside the workspace are refused.
func TestDiffOpen(t *testing.T) {
	ws := newRepo(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx := context.Background()
	r, _ := NewDiff(Config{Workspace: ws, Out: &out}).Invoke(ctx, call("s", map[string]any{"paths": []any{"a.txt"}, "title": "T"}))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	diff := r.Data["diff"].(string)
	if !strings.Contains(diff, "-one\n+two\n") {
		t.Errorf("diff: %q", diff)
	}
	if got, want := out.String(), "── T (diff against HEAD) ──\n"+diff+"── end of diff ──\n"; got != want {
		t.Errorf("printed\n%q\nwant\n%q", got, want)
	}
	if r.Data["surface"] != "text" || r.Data["reviewed"] != true || r.Data["verdict"] != "" {
		t.Errorf("data: %v", r.Data)
	}
	r, _ = NewDiff(Config{Workspace: ws}).Invoke(ctx, call("s", map[string]any{"paths": "a.txt"}))
	if r.Err != nil || r.Data["surface"] != "none" || r.Data["reviewed"] != false || r.Data["diff"] != diff {
		t.Errorf("without output: %v %v", r.Data, r.Err)
	}
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"paths": []any{"../x"}}, `host.diff.open: with.paths[0] "../x" is outside the workspace ` + ws.Dir() + " (widen the workspace with --workspace DIR)"},
		{map[string]any{"paths": []any{3}}, "host.diff.open: with.paths[0] must be a path, got int"},
		{map[string]any{"base": "--output=/tmp/x"}, `host.diff.open: with.base "--output=/tmp/x" starts with '-'`},
		{map[string]any{"new_text": "x"}, "host.diff.open: with.path is required with with.new_text: the file the proposed content would replace"},
		{map[string]any{"new_text": "x", "path": "a.txt", "base": "HEAD"}, "host.diff.open: with.base is for changes on disk; with.new_text compares with.path's current content with it: give one or the other"},
		{map[string]any{"path": "a.txt"}, "host.diff.open: with.path goes with with.new_text (proposed content); for changes on disk give with.paths"},
		{map[string]any{"new_text": "x", "path": "../../x"}, `host.diff.open: with.path "../../x" is outside the workspace`},
		{map[string]any{"mode": "x"}, "host.diff.open: with.mode is not a field of host.diff.open (fields: paths, base, path, new_text, title)"},
		{map[string]any{"base": "nosuch"}, "host.diff.open: git diff --no-color --no-ext-diff nosuch --: fatal: bad revision 'nosuch'"},
	} {
		r, _ := NewDiff(Config{Workspace: ws}).Invoke(ctx, call("s", tt.args))
		if got := errText(r); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%v:\n got %q\nwant %q…", tt.args, got, tt.want)
		}
	}
}

// TestDiffOpenProposed: with.new_text is compared with the file's current
// content, named as a repository diff names it; a missing file is empty;
// no repository is needed.
func TestDiffOpenProposed(t *testing.T) {
	if _, err := exec.LookPath(Git); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "m.go"), []byte("package m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d := NewDiff(Config{Workspace: ws, Out: &out})
	r, _ := d.Invoke(context.Background(), call("s", map[string]any{"path": "src/m.go", "new_text": "package n\n"}))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	diff := r.Data["diff"].(string)
	for _, want := range []string{"diff --git a/src/m.go b/src/m.go\n", "--- a/src/m.go\n+++ b/src/m.go\n", "-package m\n+package n\n"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if !strings.HasPrefix(out.String(), "── proposed src/m.go ──\n") {
		t.Errorf("printed:\n%s", out.String())
	}
	r, _ = d.Invoke(context.Background(), call("s", map[string]any{"path": "src/new.go", "new_text": "x\n"}))
	if r.Err != nil || !strings.Contains(r.Data["diff"].(string), "+x\n") {
		t.Errorf("new file: %v %v", r.Data, r.Err)
	}
	r, _ = d.Invoke(context.Background(), call("s", map[string]any{"path": "src/m.go", "new_text": "package m\n"}))
	if r.Err != nil || r.Data["diff"] != "" {
		t.Errorf("no change: %v %v", r.Data, r.Err)
	}
}

// An id that is already a safe directory name is the directory's name as
// written (Kitsoki's stories spell the path out: .worktrees/<id>); one that
// is not is made one.
func TestWorktreeIDs(t *testing.T) {
	ws := newRepo(t)
	w := NewWorktrees(Config{Workspace: ws})
	for id, dir := range map[string]string{"bf-T-1-": "bf-T-1-", "a b/c": "a-b-c", "x.y_z": "x.y_z"} {
		r := w.Invoke(context.Background(), call("s", map[string]any{"name": "b/" + dir, "id": id}), "create")
		if r.Err != nil {
			t.Fatalf("create %q: %v", id, r.Err)
		}
		if want := filepath.Join(ws.Dir(), ".worktrees", dir); r.Data["path"] != want || r.Data["id"] != dir {
			t.Errorf("id %q: %v %v, want %s", id, r.Data["id"], r.Data["path"], want)
		}
	}
}

// With an operator, the printed diff's verdict is asked at the prompt.
func TestDiffOpenAsksTheOperator(t *testing.T) {
	ws := newRepo(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for answers, want := range map[string]string{"accept": "accept", "no": "reject", "": ""} {
		var out bytes.Buffer
		op := &fakeop.Operator{}
		if answers != "" {
			op.Answers = []string{answers}
		}
		c := call("s", map[string]any{"paths": []any{"a.txt"}, "title": "T"})
		c.Run.Live = op
		r, _ := NewDiff(Config{Workspace: ws, Out: &out}).Invoke(context.Background(), c)
		if r.Err != nil || r.Data["verdict"] != want || r.Data["reviewed"] != true {
			t.Errorf("answer %q: %v %v", answers, r.Data["verdict"], r.Err)
		}
		if len(op.Asked) != 1 || op.Asked[0] != "Accept the change to T (diff against HEAD)? Answer accept or reject." {
			t.Errorf("asked %q", op.Asked)
		}
	}
}
