package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func newHandlers(t *testing.T) (*Handlers, string) {
	t.Helper()
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return New(ws), ws.Dir()
}

func call(name, session string, args map[string]any) *host.Call {
	return &host.Call{Namespace: name, SessionID: session, Args: args}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"report", "report"},
		{"Phase 1: review!", "Phase-1-review"},
		{"../../etc/passwd", "etc-passwd"},
		{".hidden", "hidden"},
		{"a..b", "a..b"},
		{"ünï/cödé", "n-c-d"},
		{"---", ""},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriteAppendReplaceAndList(t *testing.T) {
	a, ws := newHandlers(t)
	ctx := context.Background()
	dir := filepath.Join(ws, ".kitsoki", "artifacts", "s-1")
	steps := []struct {
		name string
		args map[string]any
		want map[string]any
	}{
		{DirName, map[string]any{"thread": "report", "title": "Review", "body": "first", "phase_id": "p1"},
			map[string]any{"ok": true, "path": filepath.Join(dir, "report.md"), "message_id": "report#1"}},
		{DirPost, map[string]any{"thread": "report", "body": map[string]any{"n": int64(2)}},
			map[string]any{"ok": true, "path": filepath.Join(dir, "report.md"), "message_id": "report#2"}},
		{DirName, map[string]any{"thread": "notes/a.txt", "body": "x", "mode": "replace"},
			map[string]any{"ok": true, "path": filepath.Join(dir, "notes", "a.txt"), "message_id": "a#1"}},
		{DirName, map[string]any{"thread": "notes/a.txt", "body": "y", "mode": "replace"},
			map[string]any{"ok": true, "path": filepath.Join(dir, "notes", "a.txt"), "message_id": "a#1"}},
		{AppendName, map[string]any{"thread": "t1", "body": "one"},
			map[string]any{"ok": true, "path": filepath.Join(dir, "transcript.md"), "message_id": "transcript#1"}},
		{AppendPost, map[string]any{"body": "two", "title": "Two"},
			map[string]any{"ok": true, "path": filepath.Join(dir, "transcript.md"), "message_id": "transcript#2"}},
	}
	for i, s := range steps {
		res, err := a.handler(s.name)(ctx, call(s.name, "s/1", s.args))
		if err != nil || res.Err != nil {
			t.Fatalf("step %d: %v %v", i, err, res.Err)
		}
		if diff := cmp.Diff(s.want, res.Data); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	files := map[string]string{
		"report.md":     "### Review\n\nfirst\n\n_phase: p1_\n\n\n---\n\n{\n  \"n\": 2\n}\n",
		"notes/a.txt":   "y\n",
		"transcript.md": "<!-- thread: t1 -->\none\n\n\n---\n\n### Two\n\ntwo\n",
	}
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(b)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	res, err := a.list(ctx, call(DirList, "s/1", nil))
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	want := map[string]any{"ok": true, "dir": dir, "artifacts": []any{
		map[string]any{"name": "notes/a.txt", "path": filepath.Join(dir, "notes", "a.txt"), "size": int64(2)},
		map[string]any{"name": "report.md", "path": filepath.Join(dir, "report.md"), "size": int64(len(files["report.md"]))},
		map[string]any{"name": "transcript.md", "path": filepath.Join(dir, "transcript.md"), "size": int64(len(files["transcript.md"]))},
	}}
	if diff := cmp.Diff(want, res.Data); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	// Another session sees only its own directory.
	res, _ = a.list(ctx, call(DirList, "other", nil))
	if got := res.Data["artifacts"]; !cmp.Equal(got, []any{}) {
		t.Errorf("other session lists %v", got)
	}
}

func TestArtifactErrors(t *testing.T) {
	a, ws := newHandlers(t)
	outside := t.TempDir()
	// A symlink inside the session directory that leads out of the workspace.
	sdir := filepath.Join(ws, ".kitsoki", "artifacts", "s")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(sdir, "out")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		err  string
	}{
		{DirName, map[string]any{"body": "x"}, "host.artifacts_dir: with.thread is required: the file name under the session's artifact directory"},
		{DirName, map[string]any{"thread": "r"}, "host.artifacts_dir: with.body is required: the text to write (or with.src_path, a file to copy)"},
		{DirName, map[string]any{"thread": "r", "body": "x", "mode": "prepend"}, "host.artifacts_dir: with.mode \"prepend\": use append or replace"},
		{DirName, map[string]any{"thread": "../x", "body": "x"},
			"host.artifacts_dir: with.thread \"../x\" climbs out of the artifact directory with ..: name a file inside it"},
		{DirName, map[string]any{"thread": "!!!", "body": "x"},
			"host.artifacts_dir: with.thread \"!!!\" has no usable file name: use letters, digits, '.', '-' or '_'"},
		{DirName, map[string]any{"thread": "out/x.md", "body": "x"},
			"host.artifacts_dir: with.thread \"" + filepath.Join(sdir, "out", "x.md") + "\" leads through a symlink to " +
				filepath.Join(outside, "x.md") + ", outside the workspace " + ws + " (widen the workspace with --workspace DIR)"},
		{AppendName, map[string]any{}, "host.append_to_file: with.body is required: the text to append"},
		{AppendName, map[string]any{"body": "x", "file": "../x"},
			"host.append_to_file: with.file \"../x\" climbs out of the artifact directory with ..: name a file inside it"},
	}
	for _, tt := range tests {
		res, err := a.handler(tt.name)(context.Background(), call(tt.name, "s", tt.args))
		if err != nil {
			t.Fatal(err)
		}
		if got := errText(res.Err); got != tt.err {
			t.Errorf("%v:\n got %q\nwant %q", tt.args, got, tt.err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a file was written outside the workspace: %v", entries)
	}
}

// handler returns the function Register installs for name.
func (a *Handlers) handler(name string) host.HandlerFunc {
	switch name {
	case DirName, DirPost:
		return a.write
	case DirList:
		return a.list
	}
	return a.append
}

func TestArtifactsRoot(t *testing.T) {
	a, ws := newHandlers(t)
	res, err := a.write(context.Background(), call(DirName, "s", map[string]any{"thread": "001-brief", "artifacts_root": "docs/design", "body": "b", "mode": "replace"}))
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	want := filepath.Join(ws, "docs", "design", "001-brief.md")
	if res.Data["path"] != want {
		t.Errorf("path = %v, want %s", res.Data["path"], want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "b\n" {
		t.Errorf("file = %q, %v", b, err)
	}
	res, _ = a.write(context.Background(), call(DirName, "s", map[string]any{"thread": "x", "artifacts_root": "..", "body": "b"}))
	if want := `host.artifacts_dir: with.artifacts_root ".." is outside the workspace ` + ws + ` (widen the workspace with --workspace DIR)`; errText(res.Err) != want {
		t.Errorf("error = %q, want %q", errText(res.Err), want)
	}
}

// with.workdir is the other name of with.artifacts_root; both at once is an
// error saying to give one.
func TestArtifactsWorkdir(t *testing.T) {
	a, ws := newHandlers(t)
	res, err := a.write(context.Background(), call(DirName, "s", map[string]any{"thread": "002-existing-state", "workdir": "docs/proposals/wf", "body": "b"}))
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if want := filepath.Join(ws, "docs", "proposals", "wf", "002-existing-state.md"); res.Data["path"] != want {
		t.Errorf("path = %v, want %s", res.Data["path"], want)
	}
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"thread": "x", "workdir": "..", "body": "b"},
			`host.artifacts_dir: with.workdir ".." is outside the workspace ` + ws + ` (widen the workspace with --workspace DIR)`},
		{map[string]any{"thread": "x", "workdir": "a", "artifacts_root": "b", "body": "b"},
			`host.artifacts_dir: with.workdir and with.artifacts_root both name the directory to write in: give one of them`},
		{map[string]any{"thread": "x", "workdir": 3, "body": "b"},
			`host.artifacts_dir: with.workdir must be a directory path, got int`},
	}
	for _, tt := range tests {
		res, _ := a.write(context.Background(), call(DirName, "s", tt.args))
		if got := errText(res.Err); got != tt.want {
			t.Errorf("%v: error = %q\nwant %q", tt.args, got, tt.want)
		}
	}
}

func TestMediaEmit(t *testing.T) {
	a, ws := newHandlers(t)
	testkit.Write(t, ws, map[string]string{"out/deck.html": "<html>", "out/deck.chapters.json": "[]", "out/deck.semantic.json": "{}"})
	res, err := a.write(context.Background(), call(DirName, "s", map[string]any{
		"thread": "report", "src_path": "out/deck.html", "kind": "slideshow", "label": "Deck"}))
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	dst := filepath.Join(ws, ".kitsoki", "artifacts", "s", "report.html")
	want := map[string]any{"ok": true, "path": dst, "mime": "text/html; charset=utf-8", "kind": "slideshow",
		"handle": map[string]any{"id": "report#1", "kind": "slideshow", "mime": "text/html; charset=utf-8", "label": "Deck", "path": dst}}
	if diff := cmp.Diff(want, res.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	for name, body := range map[string]string{"report.html": "<html>", "report.chapters.json": "[]", "report.semantic.json": "{}"} {
		if b, err := os.ReadFile(filepath.Join(ws, ".kitsoki", "artifacts", "s", name)); err != nil || string(b) != body {
			t.Errorf("%s = %q, %v; want %q", name, b, err, body)
		}
	}
	outside := filepath.Join(t.TempDir(), "x.png")
	if err := os.WriteFile(outside, []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args map[string]any
		err  string
	}{
		{map[string]any{"thread": "r", "src_path": "out/deck.html", "kind": "movie"},
			`host.artifacts_dir: with.kind "movie": the media-emit path (with.src_path) needs one of video, image, pdf, html, slideshow`},
		{map[string]any{"thread": "r", "src_path": "out/../out/deck.html", "kind": "html"},
			`host.artifacts_dir: with.src_path "out/../out/deck.html" has a .. component: name the file directly`},
		{map[string]any{"thread": "r", "src_path": outside, "kind": "image"},
			`host.artifacts_dir: with.src_path "` + outside + `" is outside the workspace ` + ws + ` (widen the workspace with --workspace DIR)`},
		{map[string]any{"thread": "r", "src_path": "out", "kind": "html"}, `host.artifacts_dir: with.src_path "out" is not a regular file`},
	}
	for _, tt := range tests {
		res, _ := a.write(context.Background(), call(DirName, "s", tt.args))
		if got := errText(res.Err); got != tt.err {
			t.Errorf("%v:\n got %q\nwant %q", tt.args, got, tt.err)
		}
	}
}
