package schemas

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Every schema file beside this package is embedded and is JSON.
func TestEverySchemaIsEmbedded(t *testing.T) {
	files, err := filepath.Glob("*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	names := Names()
	if len(files) != len(names) || !slices.Contains(names, "app") || !slices.Contains(names, "flow") {
		t.Fatalf("Names() = %v, files %v", names, files)
	}
	for _, n := range names {
		data, err := Read(n)
		if err != nil || !json.Valid(data) {
			t.Errorf("%s: %v (valid JSON: %v)", n, err, json.Valid(data))
		}
		disk, _ := os.ReadFile(n + ".schema.json")
		if string(disk) != string(data) {
			t.Errorf("%s: embedded bytes differ from the file", n)
		}
	}
}
