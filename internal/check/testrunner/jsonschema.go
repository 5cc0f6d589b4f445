package testrunner

import "github.com/kitsoki/kitsoki/internal/base/docschema"

// fixtureLists names every key list the fixture parser reads, for the
// drift test.
func fixtureLists() map[string][]string {
	return map[string][]string{
		"fixtureKeys": fixtureKeys, "turnKeys": turnKeys, "thenKeys": thenKeys,
		"stubKeys": stubKeys, "envelopeKeys": envelopeKeys,
	}
}

// fixtureShape is a flow fixture document. A document whose test_kind is
// not flow (a cassette kept beside the flows) is skipped by the runner, so
// the schema checks only flow documents.
func fixtureShape() *docschema.Shape {
	envelope := docschema.Obj(envelopeKeys, nil)
	stub := docschema.Obj(stubKeys, map[string]*docschema.Shape{
		"by_call": docschema.Map(envelope),
		"by_op":   docschema.Map(envelope),
	})
	then := docschema.Obj(thenKeys, nil)
	turn := docschema.Obj(turnKeys, map[string]*docschema.Shape{"then": docschema.List(then)})
	root := docschema.Obj(fixtureKeys, map[string]*docschema.Shape{
		"turns":         docschema.List(turn),
		"host_handlers": docschema.Map(stub),
	})
	root.When, root.WhenIs = "test_kind", "flow"
	return root
}

// FixtureJSONSchema returns the JSON Schema of a flow fixture document
// (each YAML document of a flows/*.yaml file).
func FixtureJSONSchema() map[string]any {
	return docschema.Document("https://kitsoki.dev/schemas/flow.schema.json",
		"kitsoki flow fixture (one YAML document of a flows/*.yaml file)", fixtureShape(), nil)
}
