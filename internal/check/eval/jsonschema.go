package eval

import (
	"reflect"

	"github.com/kitsoki/kitsoki/internal/base/docschema"
)

// DatasetJSONSchema returns the JSON Schema of an eval dataset file,
// generated from the Dataset type the parser decodes into (with unknown
// keys refused), so the two cannot drift. A comparator may be written as
// its kind alone.
func DatasetJSONSchema() map[string]any {
	return docschema.Document("https://kitsoki.dev/schemas/eval-dataset.schema.json",
		"kitsoki eval dataset (evals/*.yaml)",
		docschema.FromStruct(reflect.TypeFor[Dataset](), reflect.TypeFor[Comparator]()), nil)
}
