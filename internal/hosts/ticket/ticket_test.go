package ticket

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

var at = time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)

// newTickets copies testdata/ws into a fresh workspace (operations write).
func newTickets(t *testing.T) (*Tickets, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/ws")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Workspace: ws, Clock: clock.NewFake(at)}), ws.Dir()
}

func do(t *testing.T, tk *Tickets, op string, args map[string]any) *host.Result {
	t.Helper()
	return tk.Invoke(&host.Call{Namespace: Name + "." + op, Args: args}, op)
}

func ids(t *testing.T, r *host.Result) []string {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("unexpected error: %v", r.Err)
	}
	var out []string
	for _, x := range r.Data["tickets"].([]any) {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

func TestSearchAndListMine(t *testing.T) {
	tk, _ := newTickets(t)
	tests := []struct {
		name, op string
		args     map[string]any
		want     []string
	}{
		{"every ticket, P0 first, unranked last", "search", map[string]any{"query": "", "limit": 25},
			[]string{"2026-05-20-banner", "2026-05-14-esc-hang", "F-2026-05-18-export-csv"}},
		{"query matches title or body, any case", "search", map[string]any{"query": "esc"}, []string{"2026-05-14-esc-hang"}},
		{"query in a body only", "search", map[string]any{"query": "80 columns"}, []string{"2026-05-20-banner"}},
		{"limit", "search", map[string]any{"limit": int64(1)}, []string{"2026-05-20-banner"}},
		{"no match", "search", map[string]any{"query": "nothing like it"}, nil},
		{"assignee filter, assignee= prefix dropped", "list_mine", map[string]any{"filter": "assignee=ana"}, []string{"F-2026-05-18-export-csv"}},
		{"empty filter lists all", "list_mine", map[string]any{}, []string{"2026-05-20-banner", "2026-05-14-esc-hang", "F-2026-05-18-export-csv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tk, tt.op, tt.args)
			if d := cmp.Diff(tt.want, ids(t, r)); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
			if r.Data["ok"] != true {
				t.Errorf("ok = %v", r.Data["ok"])
			}
			want := []any{map[string]any{"path": "issues/bugs/broken.md",
				"error": "issues/bugs/broken.md:1: the front matter opened with --- is never closed: end it with a line holding only ---"}}
			if d := cmp.Diff(want, r.Data["skipped"]); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
		})
	}
	summary := do(t, tk, "search", map[string]any{"query": "banner"}).Data["tickets"].([]any)[0]
	want := map[string]any{"id": "2026-05-20-banner", "type": "bug", "title": "Foyer banner truncated", "status": "open",
		"severity": "P0", "assignee": "", "url": "", "repro_command": "", "path": "issues/bugs/2026-05-20-banner.md"}
	if d := cmp.Diff(want, summary); d != "" {
		t.Errorf("summary (title from the # heading) (-want +got):\n%s", d)
	}
}

func TestGet(t *testing.T) {
	tk, _ := newTickets(t)
	r := do(t, tk, "get", map[string]any{"id": "2026-05-14-esc-hang"})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := map[string]any{
		"ok": true, "id": "2026-05-14-esc-hang", "type": "bug", "title": "TUI hangs on ESC", "status": "open", "severity": "P1",
		"assignee": "brad", "url": "", "repro_command": "go test ./internal/tui -run TestEsc", "path": "issues/bugs/2026-05-14-esc-hang.md",
		"body": "Pressing ESC while a turn is in flight freezes the UI.",
		"comments": []any{
			map[string]any{"id": "2026-05-14-esc-hang#1", "author": "brad", "created_at": "2026-05-14T10:32:05Z", "body": "Reproduced on main."},
			map[string]any{"id": "2026-05-14-esc-hang#2", "author": "ana", "created_at": "2026-05-15T08:00:00Z", "body": "Same here."},
		},
	}
	if d := cmp.Diff(want, r.Data); d != "" {
		t.Errorf("get (-want +got):\n%s", d)
	}
	if got := do(t, tk, "get", map[string]any{"id": "F-2026-05-18-export-csv"}).Data["type"]; got != "feature" {
		t.Errorf("type = %v, want feature (issues/features/)", got)
	}
}

// comment appends a signed, clock-stamped section; transition rewrites
// status and keeps every other key, the body and the comments.
func TestCommentAndTransition(t *testing.T) {
	tk, dir := newTickets(t)
	r := do(t, tk, "comment", map[string]any{"id": "2026-05-14-esc-hang", "thread": "TKT-1", "body": "Fixed in abc123.\n"})
	if r.Err != nil || r.Data["comment_id"] != "2026-05-14-esc-hang#3" {
		t.Fatalf("comment = %+v, %v", r.Data, r.Err)
	}
	r = do(t, tk, "comment", map[string]any{"thread": "issues/features/F-2026-05-18-export-csv.md", "body": "Started.", "author": "ana"})
	if r.Err != nil || r.Data["comment_id"] != "F-2026-05-18-export-csv#1" {
		t.Fatalf("comment by thread = %+v, %v", r.Data, r.Err)
	}
	r = do(t, tk, "transition", map[string]any{"id": "2026-05-14-esc-hang", "to": "resolved"})
	if r.Err != nil || r.Data["status"] != "resolved" || r.Data["ok"] != true {
		t.Fatalf("transition = %+v, %v", r.Data, r.Err)
	}
	do(t, tk, "transition", map[string]any{"id": "F-2026-05-18-export-csv", "to": "in_progress"})
	b, err := os.ReadFile(filepath.Join(dir, "issues/bugs/2026-05-14-esc-hang.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := `---
title: TUI hangs on ESC
status: resolved
severity: P1
assignee: brad
repro_command: go test ./internal/tui -run TestEsc
labels: [tui, input]
---
Pressing ESC while a turn is in flight freezes the UI.

## Comment 2026-05-14T10:32:05Z by brad

Reproduced on main.

## Comment 2026-05-15T08:00:00Z by ana

Same here.

## Comment 2026-06-01T12:30:00Z by kitsoki

Fixed in abc123.
`
	if d := cmp.Diff(want, string(b)); d != "" {
		t.Errorf("ticket file (-want +got):\n%s", d)
	}
	got := do(t, tk, "get", map[string]any{"id": "F-2026-05-18-export-csv"}).Data
	if got["status"] != "in_progress" || got["url"] != "https://example.test/F-2026-05-18" {
		t.Errorf("feature after transition = %+v", got)
	}
	if cs := got["comments"].([]any); len(cs) != 1 || cs[0].(map[string]any)["author"] != "ana" || cs[0].(map[string]any)["created_at"] != "2026-06-01T12:30:00Z" {
		t.Errorf("feature comments = %+v", cs)
	}
}

// A ticket without front matter gets one on its first transition.
func TestTransitionAddsFrontMatter(t *testing.T) {
	tk, dir := newTickets(t)
	p := filepath.Join(dir, "issues/bugs/plain.md")
	if err := os.WriteFile(p, []byte("# Plain\n\nNo front matter.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, tk, "transition", map[string]any{"id": "plain", "to": "wontfix"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	b, _ := os.ReadFile(p)
	if d := cmp.Diff("---\nstatus: wontfix\n---\n# Plain\n\nNo front matter.\n", string(b)); d != "" {
		t.Errorf("file (-want +got):\n%s", d)
	}
	// An empty front matter block is filled, not doubled.
	p = filepath.Join(dir, "issues/bugs/empty.md")
	if err := os.WriteFile(p, []byte("---\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, tk, "transition", map[string]any{"id": "empty", "to": "open"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	b, _ = os.ReadFile(p)
	if d := cmp.Diff("---\nstatus: open\n---\nBody.\n", string(b)); d != "" {
		t.Errorf("empty front matter (-want +got):\n%s", d)
	}
}

func TestErrors(t *testing.T) {
	tk, dir := newTickets(t)
	outside := t.TempDir()
	tests := []struct {
		name, op string
		args     map[string]any
		want     string
	}{
		{"unknown op", "close", nil, `host.local_files.ticket: with.op "close" is not an operation (operations: search, get, comment, transition, list_mine)`},
		{"unknown field", "get", map[string]any{"id": "x", "idd": "y"},
			"host.local_files.ticket.get: with.idd is not a field of host.local_files.ticket.get (fields: id, root, repo)"},
		{"repo set", "search", map[string]any{"repo": "acme/app"},
			`host.local_files.ticket.search: with.repo is "acme/app", but host.local_files.ticket reads the workspace's issues/ files, not a hosted repository: leave repo empty, or bind iface.ticket to a provider of that repository`},
		{"id missing", "get", map[string]any{}, "host.local_files.ticket.get: with.id is required (e.g. id: 2026-05-14-esc-hang)"},
		{"id not a string", "get", map[string]any{"id": 7}, "host.local_files.ticket.get: with.id must be a string, got int"},
		{"id with a path", "get", map[string]any{"id": "../../etc/passwd"},
			`host.local_files.ticket.get: with.id "../../etc/passwd" is not a ticket id: write the file name under issues/<type>/ without .md, e.g. 2026-05-14-esc-hang`},
		{"id with .md", "transition", map[string]any{"id": "x.md", "to": "resolved"},
			`host.local_files.ticket.transition: with.id "x.md" is not a ticket id: write the file name under issues/<type>/ without .md, e.g. 2026-05-14-esc-hang`},
		{"not found", "comment", map[string]any{"id": "TKT-002", "thread": "TKT-002", "body": "x"},
			`host.local_files.ticket.comment: ticket "TKT-002" not found: there is no issues/bugs/TKT-002.md, issues/features/TKT-002.md, issues/epics/TKT-002.md under ` + dir},
		{"comment body missing", "comment", map[string]any{"id": "2026-05-14-esc-hang", "body": "  "},
			`host.local_files.ticket.comment: with.body is required (e.g. body: "Fixed in abc123.")`},
		{"comment without id or thread", "comment", map[string]any{"body": "x"},
			"host.local_files.ticket.comment: with.id is required (or with.thread naming a ticket's .md file)"},
		{"thread outside the workspace", "comment", map[string]any{"thread": filepath.Join(outside, "t.md"), "body": "x"},
			`host.local_files.ticket.comment: with.thread: "` + filepath.Join(outside, "t.md") + `" is outside the workspace ` + dir + ` (widen the workspace with --workspace DIR)`},
		{"thread file missing", "comment", map[string]any{"thread": "issues/bugs/nope.md", "body": "x"},
			`host.local_files.ticket.comment: with.thread "issues/bugs/nope.md": no such ticket file under ` + dir},
		{"to missing", "transition", map[string]any{"id": "2026-05-14-esc-hang"}, "host.local_files.ticket.transition: with.to is required (e.g. to: resolved)"},
		{"root outside", "search", map[string]any{"root": "../.."},
			`host.local_files.ticket.search: with.root: "../.." is outside the workspace ` + dir + ` (widen the workspace with --workspace DIR)`},
		{"bad limit", "search", map[string]any{"limit": -1}, "host.local_files.ticket.search: with.limit must be a whole number (0 for no limit), got -1"},
		{"limit not a number", "search", map[string]any{"limit": "ten"}, "host.local_files.ticket.search: with.limit must be a whole number (0 for no limit), got ten (string)"},
		{"broken file", "get", map[string]any{"id": "broken"},
			"host.local_files.ticket.get: issues/bugs/broken.md:1: the front matter opened with --- is never closed: end it with a line holding only ---"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tk.Invoke(&host.Call{Args: tt.args}, tt.op)
			if r.Err == nil {
				t.Fatalf("no error; data %+v", r.Data)
			}
			if d := cmp.Diff(tt.want, r.Err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			if r.Data["ok"] != false {
				t.Errorf("ok = %v, want false", r.Data["ok"])
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "issues/bugs/TKT-002.md")); !os.IsNotExist(err) {
		t.Errorf("a comment on a missing ticket created a file (%v)", err)
	}
}

// The registered names: the bare handler takes with.op; each operation
// has its own name (what iface.ticket.<op> is rewritten to).
func TestRegister(t *testing.T) {
	tk, _ := newTickets(t)
	h := host.New(&story.Story{}, nil, nil)
	Register(h, tk.cfg)
	res, err := h.Dispatch(t.Context(), &host.Call{Namespace: Name, Args: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "host.local_files.ticket: with.op is required: one of search, get, comment, transition, list_mine (or invoke host.local_files.ticket.<op>)"; res.Err == nil || res.Err.Error() != want {
		t.Errorf("bare handler without op: %v, want %q", res.Err, want)
	}
	res, err = h.Dispatch(t.Context(), &host.Call{Namespace: Name, Args: map[string]any{"op": "get", "id": "2026-05-20-banner"}})
	if err != nil || res.Err != nil || res.Data["title"] != "Foyer banner truncated" {
		t.Errorf("op: get = %+v, %v, %v", res, err, res.Err)
	}
	res, err = h.Dispatch(t.Context(), &host.Call{Namespace: Name + ".search", Args: map[string]any{"query": "csv"}})
	if err != nil || res.Err != nil || !strings.Contains(ids(t, res)[0], "export-csv") {
		t.Errorf("search = %+v, %v", res, err)
	}
}

// The front matter's closing line is a line holding only ---; it may be
// empty or end the file.
func TestFrontMatterForms(t *testing.T) {
	tests := []struct {
		name, file, title, status, body string
		err                             string
	}{
		{"empty front matter", "---\n---\n# Heading\n", "Heading", "", "# Heading", ""},
		{"closing line ends the file", "---\ntitle: T\nstatus: open\n---", "T", "open", "", ""},
		{"the first closing line ends it; a later --- rule is body", "---\ntitle: T\n---\nAbove\n\n---\n\nBelow\n", "T", "", "Above\n\n---\n\nBelow", ""},
		{"a ---- line does not close it", "---\ntitle: T\n----\n", "", "", "",
			"host.local_files.ticket.get: issues/bugs/x.md:1: the front matter opened with --- is never closed: end it with a line holding only ---"},
		{"no front matter", "Just text.\n", "x", "", "Just text.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, dir := newTickets(t)
			if err := os.WriteFile(filepath.Join(dir, "issues/bugs/x.md"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			r := do(t, tk, "get", map[string]any{"id": "x"})
			if tt.err != "" {
				if r.Err == nil || r.Err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", r.Err, tt.err)
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			got := []any{r.Data["title"], r.Data["status"], r.Data["body"]}
			if d := cmp.Diff([]any{tt.title, tt.status, tt.body}, got); d != "" {
				t.Errorf("title, status, body (-want +got):\n%s", d)
			}
		})
	}
}
