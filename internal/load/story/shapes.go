package story

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A key written with the wrong shape (a scalar where the format wants a
// mapping, a mapping where it wants a list) is reported with the shapes the
// key accepts, an example, and, when the value written can be turned into
// the shape wanted, that rewrite as a did-you-mean. shapeHint finds the key
// from the diagnostic's path.

// shapeRule describes one key's accepted shapes.
type shapeRule struct {
	accepts string                    // what the key takes
	example string                    // one way to write it
	suggest func(n *yaml.Node) string // a rewrite of the value given, or ""
}

// nameMaps are the keys whose entries are names the author chooses: a path
// segment after one of them is a name, not a key of the format.
var nameMaps = []string{
	"on", "intents", "checkpoint_intents", "slots", "world", "states", "agents", "meta_modes", "phase_templates",
	"host_interfaces", "operations", "providers", "agent_plugins", "host_plugins", "exits", "proposals", "graph",
	"parameters", "pairs", "set", "increment", "with", "bind", "blocks", "env", "headers", "imports", "next",
	"cycle_budgets", "views", "fields",
}

// stateRoots are the first path segments under which a state's keys sit.
var stateRoots = []string{"states", "phase_templates", "root"}

// keyShapes are the rules for a format key (the last path segment).
var keyShapes = map[string]shapeRule{
	"timeout": {accepts: "a mapping {after: <duration>, target: <state>}", example: "timeout: {after: 10m, target: idle}",
		suggest: func(n *yaml.Node) string {
			if n.Kind == yaml.ScalarNode {
				return fmt.Sprintf("timeout: {after: %s, target: <state>}", n.Value)
			}
			return ""
		}},
	"view":   {accepts: "a text template, a list of view elements, or a mapping {extends, blocks} or {template_file}", example: `view: "Hello {{ world.name }}"`},
	"menu":   {accepts: "a list of intent names", example: "menu: [go, stop]", suggest: scalarToList("menu")},
	"footer": {accepts: "a text template", example: `footer: "{{ world.left }} left"`},
	"theme":  {accepts: "a theme name (" + strings.Join(Themes, ", ") + ")", example: "theme: meta-blue"},
	"mode":   {accepts: "conversational", example: "mode: conversational"},
	"on":     {accepts: "a mapping of intent name → arms", example: "on: {go: [{target: next}]}"},
	"on_enter": {accepts: "a list of effects", example: `on_enter: [{set: {n: 1}}, {say: "hi"}]`,
		suggest: mappingToList("on_enter")},
	"effects": {accepts: "a list of effects", example: `effects: [{set: {n: 1}}]`, suggest: mappingToList("effects")},
	"on_complete": {accepts: "a list of effects", example: `on_complete: [{say: "done"}]`,
		suggest: mappingToList("on_complete")},
	"set":       {accepts: "a mapping of world key → value", example: `set: {count: 1, name: "{{ slots.name }}"}`},
	"increment": {accepts: "a mapping of world key → number", example: "increment: {count: 1}", suggest: scalarToMap("increment", "1")},
	"invoke": {accepts: "a handler name, with the call's arguments under with:", example: "invoke: host.run",
		suggest: func(n *yaml.Node) string {
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if k := n.Content[i].Value; (k == "name" || k == "handler") && n.Content[i+1].Kind == yaml.ScalarNode {
						return "invoke: " + n.Content[i+1].Value + " (its other keys under with:)"
					}
				}
			}
			return ""
		}},
	"with":           {accepts: "a mapping of argument → value template", example: `with: {prompt: prompts/ask.md}`},
	"bind":           {accepts: "a mapping of world key → result path", example: "bind: {verdict: submitted}"},
	"when":           {accepts: "a guard expression (a string)", example: `when: "world.n > 0"`},
	"relevant_world": {accepts: "a list of world keys", example: "relevant_world: [loans, member]", suggest: scalarToList("relevant_world")},
	"relevant_slots": {accepts: "a list of slot names", example: "relevant_slots: [shelf]", suggest: scalarToList("relevant_slots")},
	"examples":       {accepts: "a list of strings", example: `examples: ["go north"]`, suggest: scalarToList("examples")},
	"values":         {accepts: "a list of values", example: "values: [north, south]", suggest: scalarToList("values")},
	"hosts":          {accepts: "a list of handler names", example: "hosts: [host.run]", suggest: scalarToList("hosts")},
	"tools":          {accepts: "a list of tool names", example: "tools: [Read, Grep]", suggest: scalarToList("tools")},
	"include":        {accepts: "a glob or a list of globs", example: `include: ["rooms/*.yaml"]`},
	"agent_off_ramp": {accepts: "true, false or a mapping {agent, persona, banner}", example: "agent_off_ramp: {agent: guide}"},
	"contextual_routing": {accepts: "a mapping {enabled, pending_plan_path, plan_accept_intent, plan_refine_intent, room_chat, help_chat, meta_chat}",
		example: "contextual_routing: {enabled: true, room_chat: work}"},
	"states":  {accepts: "a mapping of state name → state", example: "states: {idle: {view: \"Idle.\"}}"},
	"initial": {accepts: "the name of a child state (a template may choose it)", example: "initial: idle"},
	"list": {accepts: "a mapping {items: [...], marker}", example: `list: {items: ["one", {label: two, hint: "the second"}]}`,
		suggest: func(n *yaml.Node) string {
			if n.Kind == yaml.SequenceNode {
				return "list: {items: [...]} with these items"
			}
			return ""
		}},
	"media": {accepts: "a mapping {handle or path, caption, kind, annotate_intent, annotate_feedback_slot}", example: "media: {path: media/map.png, caption: The map}",
		suggest: func(n *yaml.Node) string {
			if n.Kind != yaml.ScalarNode {
				return ""
			}
			if strings.ContainsAny(n.Value, "/.") {
				return fmt.Sprintf("media: {path: %s}", n.Value)
			}
			return fmt.Sprintf("media: {handle: %s}", n.Value)
		}},
	"kv":         {accepts: "a mapping {pairs: {Label: value, ...}}", example: `kv: {pairs: {Loans: "{{ world.loans }}"}}`},
	"banner":     {accepts: "a text template or a mapping {text, subtitle, color}", example: `banner: {text: Welcome, subtitle: "Day {{ world.day }}"}`},
	"choice":     {accepts: "a mapping {mode, prompt, items, ...}", example: "choice: {items: [{label: Go, intent: go}]}"},
	"return":     {accepts: "a command or state name, or for a meta mode a mapping {intent, message}", example: `return: {message: "Back to the story."}`},
	"prompt":     {accepts: "a prompt file or inline prompt text (a string)", example: "prompt: prompts/decide.md"},
	"transcript": {accepts: "persistent or transient", example: "transcript: transient"},
	"priority":   {accepts: "an integer (higher comes first in the menu)", example: "priority: 10"},
	"hidden":     {accepts: "true or false", example: "hidden: true"},
	"terminal":   {accepts: "true or false", example: "terminal: true"},
	"required":   {accepts: "true or false", example: "required: true"},
}

// intentSlots and emitSlots are the two slots: keys: an intent's
// declarations and an emit_intent's values.
var (
	intentSlots = shapeRule{accepts: "a mapping of slot name → slot", example: "slots: {name: {type: string, required: true}}",
		suggest: func(n *yaml.Node) string {
			if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
				return ""
			}
			parts := make([]string, 0, len(n.Content))
			for _, c := range n.Content {
				if c.Kind != yaml.ScalarNode {
					return ""
				}
				parts = append(parts, c.Value+": {type: string}")
			}
			return "slots: {" + strings.Join(parts, ", ") + "}"
		}}
	emitSlots = shapeRule{accepts: "a mapping of slot name → value template", example: `slots: {name: "{{ world.name }}"}`}
)

// namedKinds say what an entry of a name map is, for the message.
var namedKinds = map[string]string{
	"intents": "an intent", "checkpoint_intents": "a checkpoint intent", "slots": "a slot", "states": "a state",
	"agents": "a persona", "meta_modes": "a meta mode", "providers": "a provider", "phase_templates": "a phase template",
	"on": "an intent's arm list",
}

// namedShapes are the rules for an entry of a name map (the segment after
// the map's key).
var namedShapes = map[string]shapeRule{
	"intents": {accepts: "a mapping {title, description, examples, priority, hidden, slots, synonyms} ({} for none of them)",
		example: `go: {description: "Go somewhere."}`, suggest: scalarAs("description")},
	"checkpoint_intents": {accepts: "a mapping {title, description, examples, slots, ...}", example: `approve: {description: "Accept it."}`,
		suggest: scalarAs("description")},
	"slots": {accepts: "a mapping {type, required, default, values, description, examples, prompt, format_hint, validator, format, synonyms}",
		example: "name: {type: string, required: true}", suggest: scalarAs("type")},
	"states":          {accepts: "a mapping of state keys {view, on, on_enter, ...} ({} for an empty state)", example: `idle: {view: "Idle."}`},
	"agents":          {accepts: "a mapping {system_prompt or system_prompt_path, model, tools, ...}", example: `guide: {system_prompt: "You guide."}`, suggest: scalarAs("system_prompt")},
	"meta_modes":      {accepts: "a mapping {trigger, agent, banner, label, group, default, persist, cwd, tools, return}", example: "story: {trigger: meta, agent: story-author}", suggest: scalarAs("trigger")},
	"providers":       {accepts: "a mapping {model, effort, env}", example: "glm: {model: glm-4.6}", suggest: scalarAs("model")},
	"phase_templates": {accepts: "a mapping {parameters, states}", example: "stage: {parameters: {label: {type: string}}, states: {...}}"},
	"on": {accepts: "a list of arms (or one arm) {target, when, default, effects, guard_hint, view, emit, push_history}",
		example: `go: [{target: next, when: "world.ready"}]`,
		suggest: func(n *yaml.Node) string {
			if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
				return fmt.Sprintf("[{target: %s}]", n.Value)
			}
			return ""
		}},
}

// topShapes are the rules for top-level keys.
var topShapes = map[string]shapeRule{
	"app":      {accepts: "a mapping {id, version, title, author, license, context, context_path}", example: "app: {id: my-story, title: My story}", suggest: scalarAs("id")},
	"off_path": {accepts: "a mapping {trigger, banner, return, agent, persona}", example: `off_path: {trigger: "/freeform", agent: guide}`, suggest: scalarAs("trigger")},
	"decider":  {accepts: "a mapping {agent, schema, prompt, threshold}", example: "decider: {agent: judge, schema: schemas/decision.json}", suggest: scalarAs("agent")},
	"phases":   {accepts: "a mapping {template, graph}", example: "phases: {template: stage, graph: {draft: {next: {continue: review}}}}"},
	"prompts":  {accepts: "a mapping {shared: [dirs], overlay: dir}", example: "prompts: {shared: [../shared/prompts]}"},
	"world":    {accepts: "a mapping of world key → {type, default, values} or a default value", example: "world: {count: {type: int, default: 0}}"},
	"intents":  {accepts: "a mapping of intent name → intent", example: `intents: {go: {description: "Go."}}`},
}

// shapeHint is what a wrong-shape diagnostic at path adds: the shapes the
// key accepts, an example and, where one can be made, a did-you-mean.
func shapeHint(path string, n *yaml.Node) string {
	r, key, ok := shapeRuleFor(path)
	if !ok {
		return ""
	}
	out := fmt.Sprintf("; %s takes %s, e.g. %s", key, r.accepts, r.example)
	if r.suggest != nil && n != nil {
		if s := r.suggest(n); s != "" {
			if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
				segs := pathSegments(path)
				s = segs[len(segs)-1] + ": " + s
			}
			out += " (did you mean " + s + "?)"
		}
	}
	return out
}

func shapeRuleFor(path string) (shapeRule, string, bool) {
	segs := pathSegments(path)
	if len(segs) == 0 {
		return shapeRule{}, "", false
	}
	last := segs[len(segs)-1]
	if len(segs) == 1 {
		r, ok := topShapes[last]
		return r, last + ":", ok
	}
	parent := segs[len(segs)-2]
	if slices.Contains(nameMaps, parent) {
		// last is a name the author chose.
		if r, ok := namedShapes[parent]; ok && namedEntry(segs) {
			return r, namedKinds[parent], true
		}
		return shapeRule{}, "", false
	}
	if last == "slots" {
		if len(segs) >= 3 && (segs[len(segs)-3] == "intents" || segs[len(segs)-3] == "checkpoint_intents") {
			return intentSlots, "slots:", true
		}
		return emitSlots, "slots:", true
	}
	r, ok := keyShapes[last]
	if !ok {
		return shapeRule{}, "", false
	}
	switch last {
	case "timeout", "view", "menu", "footer", "theme", "mode", "on", "states", "initial", "agent_off_ramp", "contextual_routing", "relevant_world", "relevant_slots", "transcript":
		if !slices.Contains(stateRoots, segs[0]) {
			return shapeRule{}, "", false
		}
	}
	return r, last + ":", true
}

// namedEntry reports whether the last segment is an entry of the name map
// before it in the place the rule means: slots of an intent (not an
// emit_intent's slots), states at the top or nested (not a phase
// template's parameters).
func namedEntry(segs []string) bool {
	parent := segs[len(segs)-2]
	switch parent {
	case "slots":
		return len(segs) >= 4 && (segs[len(segs)-4] == "intents" || segs[len(segs)-4] == "checkpoint_intents")
	case "intents", "checkpoint_intents", "agents", "meta_modes", "providers", "phase_templates":
		return len(segs) == 2 || parent == "intents"
	}
	return true
}

// pathSegments splits a diagnostic path at dots, dropping [N] indexes.
func pathSegments(path string) []string {
	if path == "" {
		return nil
	}
	segs := strings.Split(path, ".")
	for i, s := range segs {
		if j := strings.IndexByte(s, '['); j >= 0 {
			segs[i] = s[:j]
		}
	}
	return segs
}

func scalarToList(key string) func(*yaml.Node) string {
	return func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			return fmt.Sprintf("%s: [%s]", key, n.Value)
		}
		return ""
	}
}

func scalarToMap(key, value string) func(*yaml.Node) string {
	return func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			return fmt.Sprintf("%s: {%s: %s}", key, n.Value, value)
		}
		return ""
	}
}

func mappingToList(key string) func(*yaml.Node) string {
	return func(n *yaml.Node) string {
		if n.Kind == yaml.MappingNode {
			return "a one-item list: " + key + ": [{...}], or - before the effect"
		}
		return ""
	}
}

// scalarAs suggests a scalar written in place of a mapping as that
// mapping's key.
func scalarAs(key string) func(*yaml.Node) string {
	return func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			return fmt.Sprintf("{%s: %q}", key, n.Value)
		}
		return ""
	}
}
