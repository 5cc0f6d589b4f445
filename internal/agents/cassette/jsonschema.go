package cassette

import "github.com/kitsoki/kitsoki/internal/base/docschema"

// cassetteLists names every key list the cassette parser reads, for the
// drift test.
func cassetteLists() map[string][]string {
	return map[string][]string{"cassetteKeys": cassetteKeys, "episodeKeys": episodeKeys,
		"responseKeys": responseKeys, "agentKeys": agentKeys, "transcriptKeys": transcriptKeys}
}

// JSONSchema returns the JSON Schema of a cassette file (.yaml; a .zst is
// the same document compressed). An episode, its response or its agent
// block may also be a `!include file` scalar, expanded when the cassette is
// read.
func JSONSchema() map[string]any {
	episode := docschema.Obj(episodeKeys, map[string]*docschema.Shape{
		"response": docschema.ScalarOr(docschema.Obj(responseKeys, nil)),
		"agent": docschema.ScalarOr(docschema.Obj(agentKeys, map[string]*docschema.Shape{
			"transcript": docschema.Obj(transcriptKeys, nil),
		})),
	})
	root := docschema.Obj(cassetteKeys, map[string]*docschema.Shape{
		"episodes": docschema.List(docschema.ScalarOr(episode)),
	})
	return docschema.Document("https://kitsoki.dev/schemas/cassette.schema.json", "kitsoki cassette (kind: host_cassette)", root, nil)
}
