package story

import (
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Loading a story whose included file's directory a goroutine keeps
// swapping for a symlink to outside the workspace never loads the outside
// file: story files are read through the workspace root.
func TestLoadUnderASwappedDirectory(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml":        "app: {id: ws}\nroot: start\ninclude: [rooms/more.yaml]\nstates:\n  start: {}\n",
		"rooms/more.yaml": "states:\n  more: {view: inside}\n",
	})
	outside := testkit.Tree(t, map[string]string{"more.yaml": "states:\n  more: {view: OUTSIDE}\n"})
	stop := testkit.SwapDir(t, filepath.Join(dir, "rooms"), outside)
	var in, failed, escaped int
	for range 3000 {
		st, err := Load(filepath.Join(dir, "app.yaml"), WithWorkspace(dir))
		if err != nil {
			failed++
			continue
		}
		switch v := st.States["more"].View; {
		case v != nil && v.Source() == "inside":
			in++
		default:
			escaped++
		}
		st.Close()
	}
	flips := stop()
	t.Logf("%d flips: %d loads inside, %d refused", flips, in, failed)
	if escaped > 0 {
		t.Errorf("%d of 3000 loads read the outside file", escaped)
	}
	if in == 0 || flips == 0 {
		t.Errorf("the swap was not exercised: %d flips, %d loads inside", flips, in)
	}
}
