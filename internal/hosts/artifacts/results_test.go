package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// The catalog says these handlers' results are complete (a bind of any
// other field is a load error): every field each returns is listed.
func TestResultsAreTheCatalogs(t *testing.T) {
	a, ws := newHandlers(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(ws, "clip.mp4"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		args map[string]any
	}{
		{DirName, map[string]any{"thread": "report", "body": "first"}},
		{DirPost, map[string]any{"thread": "report", "body": "more"}},
		{DirName, map[string]any{"thread": "clip", "src_path": "clip.mp4", "kind": "video"}},
		{AppendName, map[string]any{"body": "one"}},
		{AppendPost, map[string]any{"body": "two"}},
		{DirList, nil},
	} {
		res, err := a.handler(s.name)(ctx, call(s.name, "s-1", s.args))
		if err != nil || res.Err != nil {
			t.Fatalf("%s: %v %v", s.name, err, res.Err)
		}
		spec, ok := catalog.Lookup(s.name)
		if !ok || !spec.ResultsComplete {
			t.Fatalf("%s: not in the catalog with complete results", s.name)
		}
		for k := range res.Data {
			found := false
			for _, f := range spec.Results {
				found = found || f.Name == k
			}
			if !found {
				t.Errorf("%s returns %q, which the catalog does not list", s.name, k)
			}
		}
	}
}
