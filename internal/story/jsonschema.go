package story

import (
	"encoding/json"
	"regexp"
	"slices"
)

// The JSON Schema of a story file, for editors (yaml-language-server and
// the like): completion of key names and a red squiggle under a key the
// loader would refuse. It is generated from the loader's own key tables
// (keySpec), so a key the loader reads is in the schema and a key the
// schema offers is one the loader reads; schemaTables lists every table and
// a test fails when a table of the package is missing from it. The schema
// checks the document's shape (which mappings take which keys, lists,
// maps of named entries); values (expressions, templates, types of
// scalars) are the loader's to check, with positions.

// shape describes one node of a story document.
type shape struct {
	ref    string            // a $defs entry, instead of the rest
	keys   *keySpec          // a mapping with these keys
	props  map[string]*shape // the shapes of some keys' values
	values *shape            // a mapping of named entries of this shape
	items  *shape            // a list of this shape
	scalar bool              // a scalar is accepted too (shorthand forms)
	any    []*shape          // one of these
	// when, with keys: the mapping is checked against keys only when it
	// has this key (world: entries are a declaration or a default value).
	when string
	// required, with keys: the mapping must have this key.
	required string
}

func shObj(keys *keySpec, props map[string]*shape) *shape { return &shape{keys: keys, props: props} }
func shMap(s *shape) *shape                               { return &shape{values: s} }
func shList(s *shape) *shape                              { return &shape{items: s} }
func shRef(name string) *shape                            { return &shape{ref: name} }
func shScalarOr(s *shape) *shape                          { c := *s; c.scalar = true; return &c }

// schemaTables names every key table of the package, for the drift test.
func schemaTables() map[string]*keySpec {
	return map[string]*keySpec{
		"topKeys": topKeys, "appKeys": appKeys, "personaKeys": personaKeys, "pluginKeys": pluginKeys,
		"hostPluginKeys": hostPluginKeys, "interfaceKeys": interfaceKeys, "interfaceOpKeys": interfaceOpKeys,
		"providerKeys": providerKeys, "worldKeys": worldKeys, "intentKeys": intentKeys, "slotKeys": slotKeys,
		"exitKeys": exitKeys, "routingKeys": routingKeys, "stateKeys": stateKeys, "armKeys": armKeys,
		"effectKeys": effectKeys, "viewMapKeys": viewMapKeys, "kvKeys": kvKeys, "listKeys": listKeys,
		"listItemKeys": listItemKeys, "bannerKeys": bannerKeys, "mediaKeys": mediaKeys, "choiceKeys": choiceKeys,
		"singleItemKeys": singleItemKeys, "multiItemKeys": multiItemKeys, "paramKeys": paramKeys,
		"fieldKeys": fieldKeys, "agentToolKeys": agentToolKeys, "annotationKeys": annotationKeys,
		"manifestKeys": manifestKeys,
	}
}

// storyShape is the document tree of a story file (app.yaml or an
// included file) and its shared definitions.
func storyShape() (root *shape, defs map[string]*shape) {
	defs = map[string]*shape{
		"state": shObj(stateKeys, map[string]*shape{
			"on_enter": shList(shRef("effect")),
			"on":       shMap(&shape{any: []*shape{shRef("arm"), shList(shRef("arm"))}, scalar: true}),
			"view":     shRef("view"),
			"states":   shMap(shRef("state")),
		}),
		"arm": shObj(armKeys, map[string]*shape{
			"effects": shList(shRef("effect")),
			"view":    shRef("view"),
		}),
		"effect": shObj(effectKeys, map[string]*shape{
			"on_complete": shList(shRef("effect")),
		}),
		"view": {any: []*shape{
			shList(shRef("element")),
			shObj(viewMapKeys, nil),
		}, scalar: true},
		"element":    elementShape(),
		"agent_tool": shObj(agentToolKeys, map[string]*shape{"annotations": shObj(annotationKeys, nil)}),
	}
	root = shObj(topKeys, map[string]*shape{
		"app":           shObj(appKeys, nil),
		"agents":        shMap(shObj(personaKeys, nil)),
		"agent_plugins": shMap(shObj(pluginKeys, map[string]*shape{"agent_tools": shList(shRef("agent_tool"))})),
		"host_plugins":  shMap(shObj(hostPluginKeys, nil)),
		"host_interfaces": shMap(shObj(interfaceKeys, map[string]*shape{
			"operations": shMap(shScalarOr(shObj(interfaceOpKeys, nil))),
		})),
		"providers": shMap(shObj(providerKeys, nil)),
		"world":     shMap(&shape{keys: worldKeys, when: "type"}),
		"intents": shMap(shScalarOr(shObj(intentKeys, map[string]*shape{
			"slots": shMap(shScalarOr(shObj(slotKeys, nil))),
		}))),
		"exits":   shMap(shScalarOr(shObj(exitKeys, nil))),
		"routing": shObj(routingKeys, nil),
		"states":  shMap(shRef("state")),
		"include": {items: &shape{}, scalar: true},
	})
	return root, defs
}

// elementShape is a typed view element: a mapping with one of ViewKinds
// (its body shaped per kind) and an optional when:.
func elementShape() *shape {
	bodies := map[string]*shape{
		"banner": shScalarOr(shObj(bannerKeys, nil)),
		"kv":     {any: []*shape{shObj(kvKeys, nil), shMap(&shape{})}},
		"list": {any: []*shape{
			shObj(listKeys, map[string]*shape{"items": shList(shScalarOr(shObj(listItemKeys, nil)))}),
			shList(shScalarOr(shObj(listItemKeys, nil))),
		}, scalar: true},
		"media": shScalarOr(shObj(mediaKeys, nil)),
		"choice": shObj(choiceKeys, map[string]*shape{
			"items": shList(&shape{any: []*shape{
				shObj(singleItemKeys, map[string]*shape{"param": shObj(paramKeys, nil)}),
				shObj(multiItemKeys, nil),
			}, scalar: true}),
			"fields": shMap(shScalarOr(shObj(fieldKeys, nil))),
		}),
	}
	el := &shape{scalar: true}
	for _, kind := range ViewKinds {
		body := bodies[kind] // nil: a text template (prose, heading, code, template)
		o := shObj(&keySpec{v1: []string{kind, "when"}}, map[string]*shape{kind: body})
		o.required = kind
		el.any = append(el.any, o)
	}
	return el
}

// manifestShape is the document tree of a plugin's manifest: file.
func manifestShape() *shape {
	return shObj(manifestKeys, map[string]*shape{"agent_tools": shList(shRef("agent_tool"))})
}

// JSONSchema returns the JSON Schema (draft 2020-12) of a story file.
func JSONSchema() map[string]any {
	root, defs := storyShape()
	return document("https://kitsoki.dev/schemas/app.schema.json",
		"kitsoki story file (app.yaml and the files it includes)", root, defs)
}

// ManifestJSONSchema returns the JSON Schema of a plugin manifest file.
func ManifestJSONSchema() map[string]any {
	_, defs := storyShape()
	return document("https://kitsoki.dev/schemas/plugin-manifest.schema.json",
		"kitsoki agent plugin manifest (agent_plugins.<alias>.manifest)", manifestShape(),
		map[string]*shape{"agent_tool": defs["agent_tool"]})
}

func document(id, title string, root *shape, defs map[string]*shape) map[string]any {
	doc := root.json()
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	doc["$id"] = id
	doc["title"] = title
	d := map[string]any{}
	for name, s := range defs {
		d[name] = s.json()
	}
	doc["$defs"] = d
	return doc
}

var scalarTypes = []any{"string", "number", "integer", "boolean", "null"}

// json renders a shape as a JSON Schema object.
func (s *shape) json() map[string]any {
	if s.ref != "" {
		return map[string]any{"$ref": "#/$defs/" + s.ref}
	}
	var alts []any
	switch {
	case s.keys != nil:
		props := map[string]any{}
		keys := slices.Concat(s.keys.v1, s.keys.later)
		for _, k := range keys {
			props[k] = map[string]any{}
			if c := s.props[k]; c != nil {
				props[k] = c.json()
			}
		}
		o := map[string]any{"type": "object", "properties": props}
		if len(s.keys.laterPrefixes) > 0 {
			pp := map[string]any{}
			for _, p := range s.keys.laterPrefixes {
				pp["^"+regexp.QuoteMeta(p)] = map[string]any{}
			}
			o["patternProperties"] = pp
		}
		o["additionalProperties"] = false
		if s.required != "" {
			o["required"] = []any{s.required}
		}
		if s.when != "" {
			// Checked only as a declaration (it has the key); any other
			// value is a default.
			return map[string]any{"if": map[string]any{"type": "object", "required": []any{s.when}}, "then": o}
		}
		alts = append(alts, o)
	case s.values != nil:
		alts = append(alts, map[string]any{"type": "object", "additionalProperties": s.values.json()})
	case s.items != nil:
		alts = append(alts, map[string]any{"type": "array", "items": s.items.json()})
	}
	for _, a := range s.any {
		alts = append(alts, a.json())
	}
	if s.scalar {
		alts = append(alts, map[string]any{"type": scalarTypes})
	}
	switch len(alts) {
	case 0:
		return map[string]any{}
	case 1:
		return alts[0].(map[string]any)
	}
	return map[string]any{"anyOf": alts}
}

// MarshalSchema renders a schema as indented JSON with a final newline,
// the form of the files under schemas/.
func MarshalSchema(doc map[string]any) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
