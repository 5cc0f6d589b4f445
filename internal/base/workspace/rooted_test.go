package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// swapFixture is a workspace holding in/ and a symlink sw that a goroutine
// flips between in/ and a directory outside the workspace; both hold a
// file f.
func swapFixture(t *testing.T) (ws Root, outside string, stop func() int) {
	t.Helper()
	dir := testkit.Tree(t, map[string]string{"in/f": "inside"})
	outside = testkit.Tree(t, map[string]string{"f": "outside"})
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop = testkit.SwapSymlink(t, filepath.Join(ws.Dir(), "sw"), filepath.Join(ws.Dir(), "in"), outside)
	return ws, outside, stop
}

const swapTries = 10_000

// Reads and writes through the workspace root never leave it, however a
// symlink of the path changes under them (issue 28: checked, then opened
// by name, 30 of 1500 reads returned an outside file).
func TestRootedOpsUnderASwappingSymlink(t *testing.T) {
	ws, outside, stop := swapFixture(t)
	p := filepath.Join(ws.Dir(), "sw", "f")
	var in, refused, escaped int
	for range swapTries {
		b, err := ws.Read(p, "sw/f")
		var oe *OutsideError
		switch {
		case err == nil && string(b) == "inside":
			in++
		case err == nil:
			escaped++
		case errors.As(err, &oe) && oe.Escaped:
			refused++
		default:
			t.Fatalf("read: %v", err)
		}
		if f, err := ws.OpenFile(filepath.Join(ws.Dir(), "sw", "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			_, _ = f.WriteString("x")
			f.Close()
		}
		_ = ws.MkdirAll(filepath.Join(ws.Dir(), "sw", "made", "here"), 0o755)
	}
	flips := stop()
	t.Logf("%d flips: %d reads inside, %d refused", flips, in, refused)
	if escaped > 0 {
		t.Errorf("%d of %d reads returned the outside file", escaped, swapTries)
	}
	for _, name := range []string{"log", "made"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); err == nil {
			t.Errorf("%s was written outside the workspace", name)
		}
	}
	if in == 0 || refused == 0 {
		t.Errorf("the swap was not exercised: %d reads inside, %d refused", in, refused)
	}
}

// A path that leads out through a symlink is an *OutsideError saying so.
func TestRootedOpenRefusesAnEscape(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{})
	outside := testkit.Tree(t, map[string]string{"f": "outside"})
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws.Open(filepath.Join(ws.Dir(), "out", "f"))
	want := `"` + filepath.Join(ws.Dir(), "out", "f") + `" leads through a symlink out of the workspace ` + ws.Dir() +
		": refused when it was opened (widen the workspace with --workspace DIR)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if _, err := ws.OpenFile("/etc/passwd", os.O_RDONLY, 0); err == nil {
		t.Error("an absolute path outside the workspace was opened")
	}
}

// The same when a directory of a path resolved earlier is swapped for a
// symlink to outside between the check and the open.
func TestResolvedPathUnderASwappedDirectory(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{"data/f": "inside"})
	outside := testkit.Tree(t, map[string]string{"f": "outside"})
	ws, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop := testkit.SwapDir(t, filepath.Join(ws.Dir(), "data"), outside)
	var in, failed, escaped int
	for range swapTries {
		real, err := ws.Resolve(ws.Dir(), "data/f")
		if err != nil {
			failed++
			continue
		}
		b, err := ws.Read(real, "data/f")
		switch {
		case err != nil:
			failed++
		case string(b) == "inside":
			in++
		default:
			escaped++
		}
		if f, err := ws.OpenFile(filepath.Join(filepath.Dir(real), "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			_, _ = f.WriteString("x")
			f.Close()
		}
	}
	flips := stop()
	t.Logf("%d flips: %d reads inside, %d failed", flips, in, failed)
	if escaped > 0 {
		t.Errorf("%d of %d reads returned the outside file", escaped, swapTries)
	}
	if _, err := os.Lstat(filepath.Join(outside, "log")); err == nil {
		t.Error("a write landed outside the workspace")
	}
	if in == 0 || flips == 0 {
		t.Errorf("the swap was not exercised: %d flips, %d inside", flips, in)
	}
}
