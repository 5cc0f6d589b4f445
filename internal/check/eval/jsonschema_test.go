package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/schematest"
)

func TestDatasetSchemaFileIsCurrent(t *testing.T) {
	schematest.Current(t, filepath.Join("..", "..", "..", "schemas", "eval-dataset.schema.json"), DatasetJSONSchema())
}

// Every dataset of ours and every corpus dataset the parser reads
// validates; misspelled keys are refused by both the schema and the parser.
func TestDatasetsValidate(t *testing.T) {
	s := schematest.Compile(t, "eval-dataset.schema.json", DatasetJSONSchema())
	var files []string
	for _, root := range []string{filepath.Join("..", "..", "..", "stories"), filepath.Join("..", "..", "..", "..", "shared", "kitsoki", "stories")} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == "evals" && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) == 0 {
		t.Fatal("no datasets found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseDataset(f, b); err != nil {
			t.Errorf("%s: parser: %v", f, err)
			continue
		}
		if err := schematest.ValidateYAML(s, b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{"kind: agent_eval\ncal: x\n", "cal"},
		{"kind: agent_eval\ncomparator: {kind: exact, feild: x}\n", "feild"},
		{"kind: agent_eval\ntask: {boundedness: {max_turn: 3}}\n", "max_turn"},
		{"kind: agent_eval\nexamples: [{name: a, expcet: {}}]\n", "expcet"},
	} {
		if err := schematest.ValidateYAML(s, []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("schema: %q: error = %v, want one naming %s", c.doc, err, c.want)
		}
		if _, err := ParseDataset("x.yaml", []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parser: %q: error = %v, want one naming %s", c.doc, err, c.want)
		}
	}
	if err := schematest.ValidateYAML(s, []byte("kind: agent_eval\ncomparator: exact\n")); err != nil {
		t.Errorf("the scalar comparator form was refused: %v", err)
	}
}
