package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/run/routes"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// The four hashes of eval-format.md §3 over the files' raw bytes; the
// toolbox is the sorted tool list joined with NUL.
func TestHashes(t *testing.T) {
	dir := filepath.Join("testdata", "audit")
	c := mustCheck(t, filepath.Join(dir, "evals", "audit.yaml"))
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := Hashes{
		Dataset: sha(read("evals/audit.yaml")),
		Prompt:  sha(read("prompts/audit.md")),
		Schema:  sha(read("schemas/verdict.json")),
		Toolbox: sha([]byte("grep\x00read")), // tools: [read, grep], sorted
	}
	if diff := cmp.Diff(want, c.CurrentHashes()); diff != "" {
		t.Errorf("hashes (-want +got):\n%s", diff)
	}

	// No persona, hence no tools: the hash of "".
	tr, err := routes.FindCallSite(c.Story, "triage")
	if err != nil {
		t.Fatal(err)
	}
	h := routes.SiteHashes(c.Story, tr)
	if h.Toolbox != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty toolbox hash = %s", h.Toolbox)
	}
	// An inline prompt or a missing file hashes to "".
	tr.PromptPath, tr.SchemaPath = "Decide {{ args.x }} now.", "schemas/missing.json"
	h = routes.SiteHashes(c.Story, tr)
	if h.Prompt != "" || h.Schema != "" {
		t.Errorf("inline prompt / missing schema hashes = %q, %q; want empty", h.Prompt, h.Schema)
	}
	if routes.HashToolbox([]string{"b", "a"}) != routes.HashToolbox([]string{"a", "b"}) {
		t.Error("toolbox hash depends on order")
	}
}

// Diff compares only hashes present on both sides.
func TestHashesDiff(t *testing.T) {
	a := Hashes{Dataset: "sha256:1", Prompt: "sha256:2", Schema: "sha256:3", Toolbox: ""}
	b := Hashes{Dataset: "sha256:1", Prompt: "sha256:x", Schema: "", Toolbox: "sha256:4"}
	if diff := cmp.Diff([]string{"prompt_hash"}, a.Diff(b)); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
}
