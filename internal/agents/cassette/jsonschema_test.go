package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/docschema"
	"github.com/kitsoki/kitsoki/internal/testsupport/schematest"
)

func TestCassetteSchemaListsEveryKeyList(t *testing.T) {
	schematest.SameNames(t, schematest.KeyLists(t, "Keys", "[]string"), cassetteLists())
	raw, err := docschema.Marshal(JSONSchema())
	if err != nil {
		t.Fatal(err)
	}
	b := string(raw)
	for n, l := range cassetteLists() {
		for _, k := range l {
			if !strings.Contains(b, `"`+k+`"`) {
				t.Errorf("%s: key %q is not in the schema", n, k)
			}
		}
	}
}

func TestCassetteSchemaFileIsCurrent(t *testing.T) {
	schematest.Current(t, filepath.Join("..", "..", "..", "schemas", "cassette.schema.json"), JSONSchema())
}

// Every cassette of ours and every corpus cassette the parser reads
// validates.
func TestCassettesValidate(t *testing.T) {
	s := schematest.Compile(t, "cassette.schema.json", JSONSchema())
	n := 0
	for _, root := range []string{filepath.Join("..", "..", "..", "stories"), filepath.Join("..", "..", "..", "..", "shared", "kitsoki", "stories")} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(b), "kind: "+CassetteKind) {
				return nil
			}
			if _, err := Load(p); err != nil {
				return nil
			}
			n++
			if err := schematest.ValidateYAML(s, b); err != nil {
				t.Errorf("%s loads, but the schema refuses it: %v", p, err)
			}
			return nil
		})
	}
	if n == 0 {
		t.Fatal("no cassettes found")
	}
	if err := schematest.ValidateYAML(s, []byte("kind: host_cassette\nepisodes: [{id: a, respnse: {}}]\n")); err == nil || !strings.Contains(err.Error(), "respnse") {
		t.Errorf("a misspelled episode key was accepted: %v", err)
	}
}
