package ghticket

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

func setup(t *testing.T) (*host.Host, string) {
	t.Helper()
	dir, _ := filepath.Abs("testdata")
	log := filepath.Join(t.TempDir(), "gh.log")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_GH_LOG", log)
	h := host.New(&story.Story{}, nil, nil)
	Register(h, Config{})
	return h, log
}

func do(t *testing.T, h *host.Host, op string, args map[string]any) *host.Result {
	t.Helper()
	r, err := h.Dispatch(context.Background(), &host.Call{Namespace: Name + "." + op, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every op goes to gh issue with the repository named; the answers are the
// ticket interface's shapes.
func TestOps(t *testing.T) {
	h, log := setup(t)
	repo := "acme/widgets"
	r := do(t, h, "create", map[string]any{"repo": repo, "title": "Greet drops the mark", "body": "It drops it.", "severity": "P1", "component": "greet", "legacy_id": "L-1"})
	if r.Err != nil || r.Data["id"] != "12" || r.Data["number"] != int64(12) {
		t.Fatalf("create = %v %v", r.Data, r.Err)
	}
	r = do(t, h, "search", map[string]any{"repo": repo, "query": "greet", "limit": 5})
	tk := r.Data["tickets"].([]any)
	first, second := tk[0].(map[string]any), tk[1].(map[string]any)
	if first["type"] != "bug" || first["priority"] != "P1" || first["assignee"] != "ana" || first["status"] != "open" || second["type"] != "feature" {
		t.Errorf("search = %v", tk)
	}
	r = do(t, h, "get", map[string]any{"repo": repo, "id": "#12"})
	if r.Data["legacy_id"] != "2026-05-01-greet" || r.Data["repro_command"] != "go test ./..." || r.Data["type"] != "feature" || r.Data["source"] != "github" {
		t.Errorf("get = %v", r.Data)
	}
	if c := r.Data["comments"].([]any); len(c) != 1 || c[0].(map[string]any)["id"] != "12#1" {
		t.Errorf("comments = %v", c)
	}
	if r = do(t, h, "comment", map[string]any{"repo": repo, "id": "12", "body": "Fixed in abc.", "thread": "T"}); r.Data["comment_id"] != "https://github.com/acme/widgets/issues/12#issuecomment-7" {
		t.Errorf("comment = %v %v", r.Data, r.Err)
	}
	for _, to := range []string{"resolved", "open", "in_progress", "wontfix"} {
		if r = do(t, h, "transition", map[string]any{"repo": repo, "id": "12", "to": to}); r.Err != nil {
			t.Errorf("transition %s: %v", to, r.Err)
		}
	}
	do(t, h, "list_mine", map[string]any{"repo": repo})
	b, _ := os.ReadFile(log)
	for _, want := range []string{
		"issue create --repo acme/widgets --title Greet drops the mark --body It drops it.\n\n```kitsoki\nlegacy_id: L-1\n``` --label P1 --label comp:greet\n",
		"issue list --repo acme/widgets --json number,title,state,url,labels,assignees --search greet --limit 5\n",
		"issue view 12 --repo acme/widgets --json number,title,state,url,labels,assignees,body,comments\n",
		"issue close 12 --repo acme/widgets\n", "issue reopen 12 --repo acme/widgets\n",
		"issue edit 12 --repo acme/widgets --add-label in_progress\n", "issue close 12 --repo acme/widgets --reason not planned\n",
		"--assignee @me\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("gh not called with %q:\n%s", want, b)
		}
	}
}

func TestErrors(t *testing.T) {
	h, _ := setup(t)
	for _, tt := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"get", map[string]any{"id": "1"}, "host.gh.ticket.get: with.repo is required: the GitHub repository as owner/name"},
		{"get", map[string]any{"repo": "--x/y", "id": "1"}, `with.repo "--x/y" is not owner/name`},
		{"get", map[string]any{"repo": "a/b", "id": "abc"}, `with.id "abc" is not a GitHub issue number`},
		{"transition", map[string]any{"repo": "a/b", "id": "1", "to": "blocked"}, `with.to "blocked" is not a status GitHub issues have`},
		{"comment", map[string]any{"repo": "a/b", "id": "1"}, "with.body is required"},
		{"get", map[string]any{"repo": "a/b", "id": "1", "idd": 2}, "with.idd is not a field of host.gh.ticket.get"},
	} {
		r := do(t, h, tt.op, tt.args)
		if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
			t.Errorf("%s %v: %v, want %q", tt.op, tt.args, r.Err, tt.want)
		}
	}
	t.Setenv("PATH", t.TempDir())
	r := do(t, h, "get", map[string]any{"repo": "a/b", "id": "1"})
	if want := "host.gh.ticket.get: gh is not installed (not found in $PATH): install the GitHub CLI (https://cli.github.com) and sign in with gh auth login, or bind iface.ticket to host.local_files.ticket"; r.Err == nil || r.Err.Error() != want {
		t.Errorf("missing gh: %v", r.Err)
	}
}
