package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tree(t *testing.T, files ...string) string {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f))
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

func TestFind(t *testing.T) {
	tmp := tree(t,
		"repo/.git/HEAD", "repo/stories/a/app.yaml",
		"worktree/.git", "worktree/s/app.yaml", // a linked worktree's .git is a file
		"plain/s/app.yaml",
		"home/.git/HEAD", "home/stories/a/app.yaml",
	)
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	tests := []struct{ story, want string }{
		{"repo/stories/a/app.yaml", "repo"},
		{"worktree/s/app.yaml", "worktree"},
		{"repo/.git/HEAD", "repo"},
		{"home/stories/a/app.yaml", "home/stories/a"}, // a work tree at $HOME is too wide
	}
	for _, tt := range tests {
		r, err := Find(filepath.Join(tmp, tt.story))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(tmp, tt.want); r.Dir() != want {
			t.Errorf("Find(%s) = %s, want %s", tt.story, r.Dir(), want)
		}
	}
	// Find through a symlinked spelling of the story's directory gives the
	// real work tree.
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(filepath.Join(tmp, "repo", "stories"), link); err != nil {
		t.Fatal(err)
	}
	r, err := Find(filepath.Join(link, "a", "app.yaml"))
	if err != nil || r.Dir() != filepath.Join(tmp, "repo") {
		t.Errorf("Find through a symlink = %v, %v; want %s", r.Dir(), err, filepath.Join(tmp, "repo"))
	}
	r, err = For(filepath.Join(tmp, "plain/s/app.yaml"), filepath.Join(tmp, "plain"))
	if err != nil || r.Dir() != filepath.Join(tmp, "plain") {
		t.Errorf("For with an explicit workspace = %v, %v", r.Dir(), err)
	}
	if _, err := New(filepath.Join(tmp, "plain/s/app.yaml")); err == nil || !strings.HasSuffix(err.Error(), ": not a directory") {
		t.Errorf("New(a file) error = %v, want ... not a directory", err)
	}
}

func TestResolve(t *testing.T) {
	tmp := tree(t, "ws/a/app.yaml", "ws/b/p.md", "out/secret", "ws/d/")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(tmp, "out"), filepath.Join(tmp, "ws", "a", "outdir")))
	must(os.Symlink(filepath.Join(tmp, "out", "secret"), filepath.Join(tmp, "ws", "a", "s")))
	must(os.Symlink(filepath.Join(tmp, "ws", "b"), filepath.Join(tmp, "ws", "a", "bdir")))
	must(os.Symlink(filepath.Join(tmp, "ws"), filepath.Join(tmp, "wslink")))
	r, err := New(filepath.Join(tmp, "wslink")) // the root is resolved too
	must(err)
	ws := filepath.Join(tmp, "ws")
	if r.Dir() != ws {
		t.Fatalf("Dir() = %s, want %s", r.Dir(), ws)
	}
	base := filepath.Join(tmp, "ws", "a")
	tests := []struct {
		name, want, err string
	}{
		{"app.yaml", "ws/a/app.yaml", ""},
		{"../b/p.md", "ws/b/p.md", ""},
		{"bdir/p.md", "ws/b/p.md", ""},
		{"missing/x.md", "ws/a/missing/x.md", ""},
		{"../d/none/deeper", "ws/d/none/deeper", ""},
		{"app.yaml/x", "ws/a/app.yaml/x", ""},
		{".", "ws/a", ""},
		{"..", "ws", ""},
		{"../..", "", `"../.." is outside the workspace ` + ws},
		{"../../out/secret", "", `"../../out/secret" is outside the workspace ` + ws},
		{"/etc/passwd", "", `"/etc/passwd" is outside the workspace ` + ws},
		{"s", "", `"s" leads through a symlink to ` + filepath.Join(tmp, "out", "secret") + `, outside the workspace ` + ws},
		{"outdir/secret", "", `"outdir/secret" leads through a symlink to ` + filepath.Join(tmp, "out", "secret") + `, outside the workspace ` + ws},
		{"outdir/none", "", `"outdir/none" leads through a symlink to ` + filepath.Join(tmp, "out", "none") + `, outside the workspace ` + ws},
	}
	for _, tt := range tests {
		got, err := r.Resolve(base, tt.name)
		if tt.err != "" {
			var oe *OutsideError
			if !errors.As(err, &oe) || err.Error() != tt.err+" (widen the workspace with --workspace DIR)" {
				t.Errorf("Resolve(%q) error = %v, want %s", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != filepath.Join(tmp, filepath.FromSlash(tt.want)) {
			t.Errorf("Resolve(%q) = %q, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	// A base written through a symlink to the workspace resolves the same.
	if got, err := r.Resolve(filepath.Join(tmp, "wslink", "a"), "../b/p.md"); err != nil || got != filepath.Join(ws, "b", "p.md") {
		t.Errorf("Resolve through a symlinked base = %q, %v", got, err)
	}
	if r.Contains(tmp) || (Root{}).Contains(ws) || !r.Contains(ws) {
		t.Error("Contains: the parent, or anything for the zero Root, must not be inside")
	}
}

func TestReadFileLimit(t *testing.T) {
	tmp := tree(t, "ok", "big", "limit", "dir/")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Truncate(filepath.Join(tmp, "big"), MaxFileSize+1))
	must(os.Truncate(filepath.Join(tmp, "limit"), MaxFileSize))
	if b, err := ReadFile(filepath.Join(tmp, "ok"), "ok"); err != nil || string(b) != "x" {
		t.Errorf("ReadFile(ok) = %q, %v", b, err)
	}
	if b, err := ReadFile(filepath.Join(tmp, "limit"), "limit"); err != nil || len(b) != MaxFileSize {
		t.Errorf("ReadFile of exactly the limit = %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(filepath.Join(tmp, "big"), "rooms/big.yaml")
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "rooms/big.yaml is 16777217 bytes; a story file may be at most 16 MiB (16777216 bytes)" {
		t.Errorf("ReadFile(big) error = %v", err)
	}
	if _, err := ReadFile(filepath.Join(tmp, "dir"), "dir"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(dir) error = %v, want ErrNotRegular", err)
	}
	if _, err := ReadFS(os.DirFS(tmp), "big", "big"); !errors.As(err, &tl) {
		t.Errorf("ReadFS(big) error = %v, want *TooLargeError", err)
	}
	r, err := New(tmp)
	must(err)
	if _, _, err := r.ReadIn(tmp, "../x"); err == nil {
		t.Error("ReadIn(../x) succeeded")
	}
}
