package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
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
		"corpus/.kitsoki-root", "corpus/stories/a/app.yaml", // a stories tree
		"mono/.git/HEAD", "mono/kit/.kitsoki-root", "mono/kit/stories/a/app.yaml",
	)
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	tests := []struct{ story, want string }{
		{"repo/stories/a/app.yaml", "repo"},
		{"worktree/s/app.yaml", "worktree"},
		{"repo/.git/HEAD", "repo"},
		{"home/stories/a/app.yaml", "home/stories/a"}, // a work tree at $HOME is too wide
		{"corpus/stories/a/app.yaml", "corpus"},
		{"mono/kit/stories/a/app.yaml", "mono/kit"}, // the nearer of .kitsoki-root and .git
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

// A workspace over an fs.FS reads only the fs.FS (the mount directory does
// not exist on disk), checks paths lexically with the same messages, and
// keeps the size limit.
func TestFS(t *testing.T) {
	mount := filepath.Join(t.TempDir(), "mem") // never created
	fsys := fstest.MapFS{
		"a/app.yaml":     {Data: []byte("x")},
		"a/rooms/r.yaml": {Data: []byte("r")},
		"b/p.md":         {Data: []byte("p")},
		"big":            {Data: make([]byte, MaxFileSize+1)},
	}
	r, err := NewFS(fsys, mount, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, gotMount := r.FS(); r.Dir() != mount || gotMount != mount || got == nil {
		t.Fatalf("NewFS: Dir %s, FS mounted at %s (%v); want %s", r.Dir(), gotMount, got, mount)
	}
	base := filepath.Join(mount, "a")
	const hint = " (widen the workspace with --workspace DIR)"
	for _, tt := range []struct{ name, want, err string }{
		{"app.yaml", "a/app.yaml", ""},
		{"../b/p.md", "b/p.md", ""},
		{"missing/x.md", "a/missing/x.md", ""},
		{"..", ".", ""},
		{"../..", "", `"../.." is outside the workspace ` + mount + hint},
		{"/etc/passwd", "", `"/etc/passwd" is outside the workspace ` + mount + hint},
	} {
		got, err := r.Resolve(base, tt.name)
		if tt.err != "" {
			var oe *OutsideError
			if !errors.As(err, &oe) || err.Error() != tt.err {
				t.Errorf("Resolve(%q) error = %v, want %s", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != filepath.Join(mount, filepath.FromSlash(tt.want)) {
			t.Errorf("Resolve(%q) = %q, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	if b, real, err := r.ReadIn(base, "../b/p.md"); err != nil || string(b) != "p" || real != filepath.Join(mount, "b", "p.md") {
		t.Errorf("ReadIn(../b/p.md) = %q, %q, %v", b, real, err)
	}
	if _, err := r.Read(filepath.Join(mount, "..", "x"), "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read outside the mount: %v, want fs.ErrNotExist", err)
	}
	var tl *TooLargeError
	if _, err := r.Read(filepath.Join(mount, "big"), "big"); !errors.As(err, &tl) {
		t.Errorf("Read(big) error = %v, want *TooLargeError", err)
	}
	if _, err := r.Read(base, "a"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Read(a directory) error = %v, want ErrNotRegular", err)
	}
	var pe *fs.PathError
	if _, err := r.Stat(filepath.Join(base, "none")); !errors.As(err, &pe) || pe.Path != filepath.Join(base, "none") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(none) error = %v, want a *fs.PathError naming the OS path", err)
	}
	if got, err := r.Glob(filepath.Join(base, "rooms", "*.yaml")); err != nil || len(got) != 1 || got[0] != filepath.Join(base, "rooms", "r.yaml") {
		t.Errorf("Glob = %q, %v", got, err)
	}
	if got, err := r.Glob(filepath.Join(mount, "..", "*")); err != nil || got != nil {
		t.Errorf("Glob outside the mount = %q, %v; want nothing", got, err)
	}
	if _, err := r.Glob(filepath.Join(base, "[")); !errors.Is(err, filepath.ErrBadPattern) {
		t.Errorf("Glob([) error = %v, want ErrBadPattern", err)
	}
	// A narrowed workspace reads the same files and refuses what is above it.
	a, err := NewFS(fsys, mount, base)
	if err != nil || a.Dir() != base {
		t.Fatalf("NewFS(a) = %s, %v", a.Dir(), err)
	}
	if _, err := a.Resolve(base, "../b/p.md"); err == nil || err.Error() != `"../b/p.md" is outside the workspace `+base+hint {
		t.Errorf("narrowed Resolve(../b/p.md) error = %v", err)
	}
	if b, err := a.Read(filepath.Join(mount, "b", "p.md"), "p.md"); err != nil || string(b) != "p" {
		t.Errorf("narrowed Read = %q, %v (Read does not confine)", b, err)
	}
	for dir, want := range map[string]string{
		filepath.Join(mount, "none"):      "workspace " + filepath.Join(mount, "none") + ": file does not exist",
		filepath.Join(mount, "b", "p.md"): "workspace " + filepath.Join(mount, "b", "p.md") + ": not a directory",
		filepath.Join(mount, ".."):        "workspace " + filepath.Join(mount, "..") + ": file does not exist",
	} {
		if _, err := r.At(dir); err == nil || err.Error() != want {
			t.Errorf("At(%s) error = %v, want %s", dir, err, want)
		}
	}
}
