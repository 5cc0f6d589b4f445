package ide

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeop"
	"github.com/kitsoki/kitsoki/internal/testsupport/gitfixture"
)

type operator = fakeop.Operator

type fixture struct {
	repo *gitfixture.Repo
	out  *bytes.Buffer
	env  map[string]string
	hd   *Handler
}

func newFixture(t *testing.T, env map[string]string, withOut bool) *fixture {
	t.Helper()
	repo := gitfixture.New(t, map[string]string{"doc.md": "one\ntwo\n", "next.md": "one\ntwo\nthree\n"})
	ws, err := workspace.New(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{repo: repo, out: &bytes.Buffer{}, env: env}
	cfg := Config{Workspace: ws, Getenv: func(k string) string { return f.env[k] }}
	if withOut {
		cfg.Out = f.out
	}
	f.hd = &Handler{cfg: cfg}
	if f.hd.cfg.Getenv == nil {
		f.hd.cfg.Getenv = os.Getenv
	}
	return f
}

func (f *fixture) call(op string, args map[string]any, op2 *operator) *host.Result {
	c := &host.Call{Namespace: Namespace + op, Args: args}
	if op2 != nil {
		c.Run.Live = op2
	}
	return f.hd.Invoke(context.Background(), c, op)
}

// fakeCode puts testdata/code (a stand-in for VS Code's CLI) first in PATH
// and returns its log.
func fakeCode(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("testdata")
	log := filepath.Join(t.TempDir(), "code.log")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_CODE_LOG", log)
	return log
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// With VS Code's CLI as the editor: open_file goes to the line, open_diff
// waits on code --diff and then asks the operator; accepted writes the
// proposed content.
func TestVSCodeEditor(t *testing.T) {
	log := fakeCode(t)
	f := newFixture(t, map[string]string{EnvEditor: "code"}, true)
	r := f.call("open_file", map[string]any{"path": "doc.md", "line": 2}, nil)
	doc := filepath.Join(f.repo.Dir, "doc.md")
	if r.Err != nil || r.Data["opened"] != true || r.Data["surface"] != "editor:code" {
		t.Fatalf("open_file = %v, %v", r.Data, r.Err)
	}
	op := &operator{Answers: []string{"maybe", "accept"}}
	r = f.call("open_diff", map[string]any{"path": "doc.md", "new_text_path": "next.md", "title": "Refine"}, op)
	if r.Err != nil || r.Data["verdict"] != Accepted || r.Data["applied"] != true || r.Data["reviewed"] != true {
		t.Fatalf("open_diff = %v, %v", r.Data, r.Err)
	}
	if got := readFile(t, doc); got != "one\ntwo\nthree\n" {
		t.Errorf("accepted: doc.md = %q", got)
	}
	want := "--reuse-window --goto " + doc + ":2\n--wait --diff " + doc + " " + filepath.Join(f.repo.Dir, "next.md") + "\n"
	if got := readFile(t, log); got != want {
		t.Errorf("code was run with:\n%s\nwant:\n%s", got, want)
	}
	if len(op.Asked) != 2 || op.Asked[0] != "Accept the change to Refine (doc.md)? Answer accept or reject." || !strings.Contains(op.Asked[1], `"maybe" is neither accept nor reject`) {
		t.Errorf("questions: %q", op.Asked)
	}
	r = f.call("get_open_editors", nil, nil)
	if r.Data["count"] != int64(1) || r.Data["connected"] != true {
		t.Errorf("get_open_editors = %v", r.Data)
	}
	if f.out.Len() != 0 {
		t.Errorf("the editor surface printed: %q", f.out)
	}
}

// With no editor the terminal is the surface: the diff is printed and the
// operator asked; rejected leaves the file; no operator is no verdict; no
// output is no surface at all.
func TestTerminalFallback(t *testing.T) {
	f := newFixture(t, map[string]string{"EDITOR": "vim"}, true)
	r := f.call("open_diff", map[string]any{"path": "doc.md", "new_text": "one\n2\n"}, &operator{Answers: []string{"reject"}})
	if r.Err != nil || r.Data["verdict"] != Rejected || r.Data["applied"] != false || r.Data["surface"] != "text" {
		t.Fatalf("open_diff = %v, %v", r.Data, r.Err)
	}
	out := f.out.String()
	if !strings.HasPrefix(out, "── proposed doc.md (vim needs the terminal this run is using) ──\n") || !strings.Contains(out, "-two\n+2\n") ||
		!strings.Contains(out, "--- a/doc.md") || !strings.HasSuffix(out, "── end of diff ──\n") {
		t.Errorf("printed:\n%s", out)
	}
	if got := readFile(t, filepath.Join(f.repo.Dir, "doc.md")); got != "one\ntwo\n" {
		t.Errorf("rejected changed doc.md: %q", got)
	}
	r = f.call("open_diff", map[string]any{"path": "new.md", "new_text": "fresh\n"}, nil)
	if r.Err != nil || r.Data["verdict"] != "" || r.Data["reviewed"] != true || !strings.Contains(r.Data["diff"].(string), "+fresh") {
		t.Errorf("no operator: %v %v", r.Data, r.Err)
	}
	r = f.call("open_file", map[string]any{"path": "doc.md"}, nil)
	if r.Data["opened"] != false || r.Data["connected"] != false || !strings.Contains(f.out.String(), "── open doc.md in your editor (vim needs the terminal this run is using) ──") {
		t.Errorf("open_file: %v %q", r.Data, f.out)
	}
	quiet := newFixture(t, nil, false)
	r = quiet.call("open_diff", map[string]any{"path": "doc.md", "new_text": "x\n"}, &operator{Answers: []string{"accept"}})
	if r.Data["surface"] != "none" || r.Data["reviewed"] != false || r.Data["verdict"] != "" {
		t.Errorf("no output: %v", r.Data)
	}
	for _, op := range []string{"get_selection", "get_diagnostics"} {
		if r := quiet.call(op, nil, nil); r.Err != nil || r.Data["connected"] != false || r.Data["reason"] != notConnected {
			t.Errorf("%s = %v", op, r.Data)
		}
	}
}

// The repository's git config kitsoki.editor names the editor when
// KITSOKI_EDITOR does not.
func TestEditorSetting(t *testing.T) {
	log := fakeCode(t)
	f := newFixture(t, map[string]string{"EDITOR": "nano"}, true)
	f.repo.Git("config", Setting, "code --new-window")
	if r := f.call("open_file", map[string]any{"path": "doc.md"}, nil); r.Err != nil || r.Data["surface"] != "editor:code" {
		t.Fatalf("open_file = %v %v", r.Data, r.Err)
	}
	if got := readFile(t, log); got != "--new-window --reuse-window --goto "+filepath.Join(f.repo.Dir, "doc.md")+"\n" {
		t.Errorf("code was run with %q", got)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t, map[string]string{EnvEditor: "no-such-editor-xyz"}, true)
	tests := []struct {
		op   string
		args map[string]any
		want string
	}{
		{"open_file", map[string]any{"path": "../../etc/passwd"}, `host.ide.open_file: with.path "../../etc/passwd" is outside the workspace`},
		{"open_file", map[string]any{"path": "nope.md"}, `host.ide.open_file: with.path "nope.md": no such file`},
		{"open_file", map[string]any{}, "with.path is required"},
		{"open_file", map[string]any{"path": "doc.md"}, "the editor (no-such-editor-xyz, from KITSOKI_EDITOR) did not open doc.md: no-such-editor-xyz is not installed (not found in $PATH): install it, or name another editor"},
		{"open_diff", map[string]any{"path": "doc.md"}, "with.new_text or with.new_text_path is required"},
		{"open_diff", map[string]any{"path": "doc.md", "new_text": "a", "new_text_path": "next.md"}, "both give the proposed content"},
		{"open_diff", map[string]any{"path": "doc.md", "new_text_path": "/etc/hostname"}, `with.new_text_path "/etc/hostname" is outside the workspace`},
		{"open_diff", map[string]any{"path": "doc.md", "text": "x"}, "with.text is not a field of host.ide.open_diff"},
	}
	for _, tt := range tests {
		r := f.call(tt.op, tt.args, nil)
		if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) || r.Data["ok"] != false {
			t.Errorf("%s %v: %v, want %q", tt.op, tt.args, r.Err, tt.want)
		}
	}
}

// The editor is the first of KITSOKI_EDITOR, git config kitsoki.editor,
// $VISUAL and $EDITOR; a terminal editor is no editor (the terminal is the
// surface), any other command is handed the file.
func TestEditorOrder(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		setting string
		source  string
		kind    string
	}{
		{"kitsoki editor first", map[string]string{EnvEditor: "cursor", "VISUAL": "code", "EDITOR": "nano"}, "codium", EnvEditor, "vscode"},
		{"the setting next", map[string]string{"VISUAL": "code", "EDITOR": "nano"}, "codium --wait", "git config " + Setting, "vscode"},
		{"visual before editor", map[string]string{"VISUAL": "gedit", "EDITOR": "code"}, "", "$VISUAL", "other"},
		{"editor last", map[string]string{"EDITOR": "nvim"}, "", "$EDITOR", "terminal"},
		{"none", nil, "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.env, true)
			if tt.setting != "" {
				f.repo.Git("config", Setting, tt.setting)
			}
			e := f.hd.editor(context.Background())
			if e.source != tt.source || e.kind != tt.kind {
				t.Errorf("editor from %q kind %q, want %q %q", e.source, e.kind, tt.source, tt.kind)
			}
		})
	}
}
