package story

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/testsupport/schematest"
)

// TestSchemaTablesAreEveryKeyTable fails when a key table of the package
// is not in schemaTables (so the JSON Schema would not know its keys), or
// schemaTables names one that is gone.
func TestSchemaTablesAreEveryKeyTable(t *testing.T) {
	schematest.SameNames(t, schematest.KeyLists(t, "", "keySpec"), schemaTables())
}

// TestSchemaUsesEveryTable fails when a listed table is not reachable from
// the story or manifest shapes.
func TestSchemaUsesEveryTable(t *testing.T) {
	u := tables{}
	storyShape(u)
	manifestShape(u)
	for name, k := range schemaTables() {
		if !u[k] {
			t.Errorf("%s is in no shape: the schema would refuse its keys", name)
		}
	}
}

// TestSchemaFilesAreCurrent compares schemas/*.json with what the loader's
// tables generate (make schemas writes them).
func TestSchemaFilesAreCurrent(t *testing.T) {
	schematest.Current(t, filepath.Join("..", "..", "..", "schemas", "app.schema.json"), JSONSchema())
	schematest.Current(t, filepath.Join("..", "..", "..", "schemas", "plugin-manifest.schema.json"), ManifestJSONSchema())
}

func compiledAppSchema(t *testing.T) *schema.Schema {
	return schematest.Compile(t, "app.schema.json", JSONSchema())
}

// storyFiles is a story's root file and the files its include: globs name.
func storyFiles(t *testing.T, app string) []string {
	t.Helper()
	files := []string{app}
	b, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	var top struct {
		Include yaml.Node `yaml:"include"`
	}
	if err := yaml.Unmarshal(b, &top); err != nil {
		return files
	}
	var globs []string
	switch top.Include.Kind {
	case yaml.ScalarNode:
		globs = []string{top.Include.Value}
	case yaml.SequenceNode:
		for _, n := range top.Include.Content {
			globs = append(globs, n.Value)
		}
	}
	for _, g := range globs {
		files = append(files, schematest.Glob(t, filepath.Join(filepath.Dir(app), g))...)
	}
	return files
}

// TestOurStoriesValidate: every story under stories/ (and the files it
// includes) is valid against the schema.
func TestOurStoriesValidate(t *testing.T) {
	s := compiledAppSchema(t)
	apps, _ := filepath.Glob(filepath.Join("..", "..", "..", "stories", "*", "app.yaml"))
	if len(apps) == 0 {
		t.Fatal("no stories found")
	}
	for _, app := range apps {
		for _, f := range storyFiles(t, app) {
			if err := schematest.ValidateFile(s, f); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}

// TestLoadableCorpusStoriesValidate: a Kitsoki corpus story our loader
// loads without an error is valid against the schema too (the two agree
// on the keys). Skipped without ../shared.
func TestLoadableCorpusStoriesValidate(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..", "shared", "kitsoki", "stories")
	if _, err := os.Stat(root); err != nil {
		t.Skip("no corpus at", root)
	}
	s := compiledAppSchema(t)
	var apps []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "app.yaml" {
			apps = append(apps, p)
		}
		return nil
	})
	loaded := 0
	for _, app := range apps {
		abs, _ := filepath.Abs(root)
		if _, err := Load(app, WithWorkspace(abs)); err != nil {
			continue
		}
		loaded++
		for _, f := range storyFiles(t, app) {
			if err := schematest.ValidateFile(s, f); err != nil {
				t.Errorf("%s loads, but the schema refuses it: %v", f, err)
			}
		}
	}
	t.Logf("%d of %d corpus stories load and validate", loaded, len(apps))
}

// TestSchemaRefusesWhatTheLoaderRefuses: misspelled keys at each level
// are schema errors, not silently accepted.
func TestSchemaRefusesWhatTheLoaderRefuses(t *testing.T) {
	s := compiledAppSchema(t)
	for _, c := range []struct{ name, doc, want string }{
		{"top", "app: {id: x}\nstats: {}\n", "'stats'"},
		{"state", "app: {id: x}\nstates: {a: {on_entre: []}}\n", "'on_entre'"},
		{"arm", "app: {id: x}\nstates: {a: {on: {go: {taget: b}}}}\n", "'taget'"},
		{"effect", "app: {id: x}\nstates: {a: {on_enter: [{invoke: host.run, bnd: {}}]}}\n", "'bnd'"},
		{"view element", "app: {id: x}\nstates: {a: {view: [{prose: hi, whn: x}]}}\n", "'whn'"},
		{"slot", "app: {id: x}\nintents: {go: {slots: {n: {tpye: string}}}}\n", "'tpye'"},
		{"world declaration", "app: {id: x}\nworld: {n: {type: int, defualt: 1}}\n", "'defualt'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal([]byte(c.doc), &v); err != nil {
				t.Fatal(err)
			}
			j, _ := json.Marshal(v)
			_, err := s.ValidateJSON(j)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one naming %s", err, c.want)
			}
		})
	}
	// A world value that is not a declaration is a default, any shape.
	j, _ := json.Marshal(map[string]any{"app": map[string]any{"id": "x"}, "world": map[string]any{"m": map[string]any{"anything": 1}}})
	if _, err := s.ValidateJSON(j); err != nil {
		t.Errorf("a mapping default was refused: %v", err)
	}
}
