package story

import (
	"slices"

	"github.com/kitsoki/kitsoki/internal/base/docschema"
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

type shape = docschema.Shape

// tables records which key tables the shapes use (the drift test reads it).
type tables map[*keySpec]bool

// obj is a mapping with spec's keys.
func (u tables) obj(spec *keySpec, props map[string]*shape) *shape {
	u[spec] = true
	return docschema.Obj(slices.Clone(spec.v1), props)
}

var (
	shMap      = docschema.Map
	shList     = docschema.List
	shRef      = docschema.Ref
	shScalarOr = docschema.ScalarOr
)

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
		"manifestKeys": manifestKeys, "importKeys": importKeys, "importExitKeys": importExitKeys,
		"importIntentKeys": importIntentKeys, "importOverrideKey": importOverrideKey, "exportsKeys": exportsKeys,
		"timeoutKeys": timeoutKeys, "embeddingKeys": embeddingKeys, "fallbackKeys": fallbackKeys, "offRampKeys": offRampKeys, "offPathKeys": offPathKeys,
		"metaModeKeys": metaModeKeys, "metaReturnKeys": metaReturnKeys, "contextualKeys": contextualKeys, "retryKeys": retryKeys,
		"phaseTemplateKeys": phaseTemplateKeys, "phaseParamKeys": phaseParamKeys, "phasesKeys": phasesKeys,
		"promptsKeys": promptsKeys, "proposalKeys": proposalKeys, "proposalStepKeys": proposalStepKeys,
		"proposalExecKeys": proposalExecKeys, "proposalPolicyKeys": proposalPolicyKeys, "deciderKeys": deciderKeys,
	}
}

// storyShape is the document tree of a story file (app.yaml or an
// included file) and its shared definitions.
func storyShape(u tables) (root *shape, defs map[string]*shape) {
	defs = map[string]*shape{
		"state": u.obj(stateKeys, map[string]*shape{
			"on_enter": shList(shRef("effect")),
			"on":       shMap(&shape{Any: []*shape{shRef("arm"), shList(shRef("arm"))}, Scalar: true}),
			"view":     shRef("view"),
			"states":   shMap(shRef("state")),
			"timeout":  u.obj(timeoutKeys, nil),
			// agent_off_ramp: true, or its settings
			"agent_off_ramp":     shScalarOr(u.obj(offRampKeys, nil)),
			"contextual_routing": u.obj(contextualKeys, nil),
		}),
		"arm": u.obj(armKeys, map[string]*shape{
			"effects": shList(shRef("effect")),
			"view":    shRef("view"),
		}),
		"effect": u.obj(effectKeys, map[string]*shape{
			"on_complete": shList(shRef("effect")),
			"retry":       u.obj(retryKeys, nil),
		}),
		"view": {Any: []*shape{
			shList(shRef("element")),
			u.obj(viewMapKeys, nil),
		}, Scalar: true},
		"element":    elementShape(u),
		"agent_tool": u.obj(agentToolKeys, map[string]*shape{"annotations": u.obj(annotationKeys, nil)}),
	}
	intents := shMap(shScalarOr(u.obj(intentKeys, map[string]*shape{
		"slots": shMap(shScalarOr(u.obj(slotKeys, nil))),
	})))
	root = u.obj(topKeys, map[string]*shape{
		"app":           u.obj(appKeys, nil),
		"agents":        shMap(u.obj(personaKeys, nil)),
		"agent_plugins": shMap(u.obj(pluginKeys, map[string]*shape{"agent_tools": shList(shRef("agent_tool"))})),
		"host_plugins":  shMap(u.obj(hostPluginKeys, nil)),
		"host_interfaces": shMap(u.obj(interfaceKeys, map[string]*shape{
			"operations": shMap(shScalarOr(u.obj(interfaceOpKeys, nil))),
		})),
		"providers":          shMap(u.obj(providerKeys, nil)),
		"world":              shMap(worldShape(u)),
		"intents":            intents,
		"checkpoint_intents": intents,
		"phase_templates": shMap(u.obj(phaseTemplateKeys, map[string]*shape{
			"parameters": shMap(u.obj(phaseParamKeys, nil)),
			"states":     shMap(shRef("state")),
		})),
		// graph: a phase's parameters beside next:, cycle_budgets:, on_enter:
		"phases":  u.obj(phasesKeys, map[string]*shape{"graph": shMap(&shape{})}),
		"prompts": u.obj(promptsKeys, nil),
		"decider": u.obj(deciderKeys, nil),
		"proposals": shMap(u.obj(proposalKeys, map[string]*shape{
			"draft":   u.obj(proposalStepKeys, nil),
			"refine":  u.obj(proposalStepKeys, nil),
			"execute": u.obj(proposalExecKeys, map[string]*shape{"on_complete": shList(shRef("effect"))}),
			"policy":  u.obj(proposalPolicyKeys, nil),
		})),
		"exits":   shMap(shScalarOr(u.obj(exitKeys, nil))),
		"routing": u.obj(routingKeys, map[string]*shape{"embedding": u.obj(embeddingKeys, nil), "free_form_fallback": u.obj(fallbackKeys, nil)}),
		"states":  shMap(shRef("state")),
		"include": {Items: &shape{}, Scalar: true},
		"imports": shMap(u.obj(importKeys, map[string]*shape{
			"exits":     shMap(shScalarOr(u.obj(importExitKeys, nil))),
			"intents":   u.obj(importIntentKeys, nil),
			"overrides": u.obj(importOverrideKey, nil),
		})),
		"exports":  u.obj(exportsKeys, nil),
		"off_path": u.obj(offPathKeys, nil),
		"meta_modes": shMap(u.obj(metaModeKeys, map[string]*shape{
			// return: an exit command, or {intent, message}
			"return": shScalarOr(u.obj(metaReturnKeys, nil)),
		})),
	})
	return root, defs
}

// elementShape is a typed view element: a mapping with one of ViewKinds
// (its body shaped per kind) and an optional when:.
func elementShape(u tables) *shape {
	bodies := map[string]*shape{
		"banner": shScalarOr(u.obj(bannerKeys, nil)),
		"kv":     {Any: []*shape{u.obj(kvKeys, nil), shMap(&shape{})}},
		"list": {Any: []*shape{
			u.obj(listKeys, map[string]*shape{"items": shList(shScalarOr(u.obj(listItemKeys, nil)))}),
			shList(shScalarOr(u.obj(listItemKeys, nil))),
		}, Scalar: true},
		"media": shScalarOr(u.obj(mediaKeys, nil)),
		"choice": u.obj(choiceKeys, map[string]*shape{
			"items": shList(&shape{Any: []*shape{
				u.obj(singleItemKeys, map[string]*shape{"param": u.obj(paramKeys, nil)}),
				u.obj(multiItemKeys, nil),
			}, Scalar: true}),
			"fields": shMap(shScalarOr(u.obj(fieldKeys, nil))),
		}),
	}
	el := &shape{Scalar: true}
	for _, kind := range ViewKinds {
		body := bodies[kind] // nil: a text template (prose, heading, code, template)
		o := docschema.Obj([]string{kind, "when"}, map[string]*shape{kind: body})
		o.Required = kind
		el.Any = append(el.Any, o)
	}
	return el
}

// manifestShape is the document tree of a plugin's manifest: file.
func manifestShape(u tables) *shape {
	return u.obj(manifestKeys, map[string]*shape{"agent_tools": shList(shRef("agent_tool"))})
}

// worldShape is a world: entry: a declaration when it has type:, else a
// default value of any shape.
func worldShape(u tables) *shape {
	s := u.obj(worldKeys, nil)
	s.When = "type"
	return s
}

// JSONSchema returns the JSON Schema (draft 2020-12) of a story file.
func JSONSchema() map[string]any {
	root, defs := storyShape(tables{})
	return docschema.Document("https://kitsoki.dev/schemas/app.schema.json",
		"kitsoki story file (app.yaml and the files it includes)", root, defs)
}

// ManifestJSONSchema returns the JSON Schema of a plugin manifest file.
func ManifestJSONSchema() map[string]any {
	u := tables{}
	_, defs := storyShape(u)
	return docschema.Document("https://kitsoki.dev/schemas/plugin-manifest.schema.json",
		"kitsoki agent plugin manifest (agent_plugins.<alias>.manifest)", manifestShape(u),
		map[string]*shape{"agent_tool": defs["agent_tool"]})
}
