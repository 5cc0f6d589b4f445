package testrunner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/docschema"
	"github.com/kitsoki/kitsoki/internal/testsupport/schematest"
)

func TestFixtureSchemaListsEveryKeyList(t *testing.T) {
	schematest.SameNames(t, schematest.KeyLists(t, "Keys", "[]string"), fixtureLists())
	// and each list is in the document's shape
	used := map[string]bool{}
	docschema.Walk(fixtureShape(), func(s *docschema.Shape) {
		for n, l := range fixtureLists() {
			if s.Keys != nil && slices.Equal(s.Keys, l) {
				used[n] = true
			}
		}
	})
	for n := range fixtureLists() {
		if !used[n] {
			t.Errorf("%s is in no shape of the fixture schema", n)
		}
	}
}

func TestFixtureSchemaFileIsCurrent(t *testing.T) {
	schematest.Current(t, filepath.Join("..", "..", "..", "schemas", "flow.schema.json"), FixtureJSONSchema())
}

// Every flow file of ours validates, and every corpus flow file the
// parser reads without an error does too.
func TestFlowsValidate(t *testing.T) {
	s := schematest.Compile(t, "flow.schema.json", FixtureJSONSchema())
	ours := schematest.Glob(t, filepath.Join("..", "..", "..", "stories", "*", "flows", "*.yaml"))
	if len(ours) == 0 {
		t.Fatal("no flows found")
	}
	for _, f := range ours {
		if err := schematest.ValidateFile(s, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	root := filepath.Join("..", "..", "..", "..", "shared", "kitsoki", "stories")
	if _, err := os.Stat(root); err != nil {
		return
	}
	parsed := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || filepath.Base(filepath.Dir(p)) != "flows" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if _, err := ParseFixtures(b, p, ""); err != nil {
			return nil
		}
		parsed++
		if err := schematest.ValidateYAML(s, b); err != nil {
			t.Errorf("%s parses, but the schema refuses it: %v", p, err)
		}
		return nil
	})
	t.Logf("%d corpus flow files parse and validate", parsed)
}

func TestFixtureSchemaRefusesTypos(t *testing.T) {
	s := schematest.Compile(t, "flow.schema.json", FixtureJSONSchema())
	for _, c := range []struct{ doc, want string }{
		{"test_kind: flow\nturnz: []\n", "'turnz'"},
		{"test_kind: flow\nturns: [{intent: {name: a}, expect_sate: b}]\n", "'expect_sate'"},
		{"test_kind: flow\nhost_handlers: {host.run: {dta: {}}}\n", "'dta'"},
		{"test_kind: flow\nhost_handlers: {host.run: {by_call: {a: {eror: x}}}}\n", "'eror'"},
		{"test_kind: flow\nturns: [{intent: {name: a}, then: [{expect_stat: b}]}]\n", "'expect_stat'"},
	} {
		err := schematest.ValidateYAML(s, []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error = %v, want one naming %s", c.doc, err, c.want)
		}
	}
	if err := schematest.ValidateYAML(s, []byte("kind: cassette\nepisodes: []\n")); err != nil {
		t.Errorf("a non-flow document was checked: %v", err)
	}
}
