package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CompileDocument compiles a self-contained schema given as JSON bytes: one
// that travels without a directory, such as a plugin tool's input or output
// schema, which kitsoki also hands to MCP clients verbatim. Only references
// inside the document itself ("#/$defs/x") resolve; any other $ref fails the
// compile. name identifies the schema in errors (e.g. "input_schema").
func CompileDocument(name string, raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", name, err)
	}
	var bad string
	walk(doc, func(m map[string]any) {
		if ref, ok := m["$ref"].(string); ok && bad == "" && !strings.HasPrefix(ref, "#") {
			bad = ref
		}
	})
	if bad != "" {
		return nil, fmt.Errorf("%s: $ref %q points outside the schema: a tool schema must be self-contained (use #/$defs/...)", name, bad)
	}
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft2020)
	jc.UseLoader(selfContained{name})
	const url = "mem:///schema.json"
	if err := jc.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sch, err := jc.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return withCheck(&Schema{Path: name, Raw: json.RawMessage(raw), Doc: doc, sch: sch}), nil
}

// selfContained refuses to load anything: a document's own references never
// reach the loader.
type selfContained struct{ name string }

func (l selfContained) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: reference %s is not part of the schema", l.name, u)
}
