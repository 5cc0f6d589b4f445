package story

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShapeErrors: a key written with the wrong shape says where, the key
// path, the shapes the key takes with an example, and the rewrite meant
// when the value given can be turned into one.
func TestShapeErrors(t *testing.T) {
	want := []string{
		`app.yaml:8:7: intents.go: expected a mapping, got the scalar "just go"; an intent takes a mapping {title, description, examples, priority, hidden, slots, synonyms} ({} for none of them), e.g. go: {description: "Go somewhere."} (did you mean go: {description: "just go"}?)`,
		`app.yaml:10:12: intents.stop.slots: expected a mapping, got a list; slots: takes a mapping of slot name → slot, e.g. slots: {name: {type: string, required: true}} (did you mean slots: {a: {type: string}, b: {type: string}}?)`,
		`app.yaml:14:11: states.a.view: a view mapping takes extends: and blocks:, or template_file:; prose: is a view element, and elements go in a list (did you mean view: [{prose: ...}]?)`,
		`app.yaml:15:13: states.a.footer: expected a string, got a list; footer: takes a text template, e.g. footer: "{{ world.left }} left"`,
		`app.yaml:16:11: states.a.menu: expected a list, got the scalar "go"; menu: takes a list of intent names, e.g. menu: [go, stop] (did you mean menu: [go]?)`,
		`app.yaml:17:14: states.a.timeout: expected a mapping, got the scalar "5m"; timeout: takes a mapping {after: <duration>, target: <state>}, e.g. timeout: {after: 10m, target: idle} (did you mean timeout: {after: 5m, target: <state>}?)`,
		`app.yaml:19:29: states.a.on.go.when: expected a guard expression, got a list; when: takes a guard expression (a string), e.g. when: "world.n > 0"`,
		`app.yaml:22:20: states.a.on.stop[0].effects: expected a list, got a mapping; effects: takes a list of effects, e.g. effects: [{set: {n: 1}}] (did you mean a one-item list: effects: [{...}], or - before the effect?)`,
		`app.yaml:25:15: states.b.view[0].list: expected a mapping, got a list; list: takes a mapping {items: [...], marker}, e.g. list: {items: ["one", {label: two, hint: "the second"}]} (did you mean list: {items: [...]} with these items?)`,
		`app.yaml:26:16: states.b.view[1].media: expected a mapping, got the scalar "x.png"; media: takes a mapping {handle or path, caption, kind, annotate_intent, annotate_feedback_slot}, e.g. media: {path: media/map.png, caption: The map} (did you mean media: {path: x.png}?)`,
		`app.yaml:27:13: states.b.view[2].kv: a kv element takes pairs: (a mapping of label: value), e.g. kv: {pairs: {Loans: "{{ world.loans }}"}} (did you mean kv: {pairs: {a: ...}}?)`,
		`app.yaml:29:14: states.b.on_enter[0].set: expected a mapping, got a list; set: takes a mapping of world key → value, e.g. set: {count: 1, name: "{{ slots.name }}"}`,
		`app.yaml:30:17: states.b.on_enter[1].invoke: expected a string, got a mapping; invoke: takes a handler name, with the call's arguments under with:, e.g. invoke: host.run (did you mean invoke: host.run (its other keys under with:)?)`,
		`app.yaml:32:17: states.b.transcript: expected a string, got a mapping; transcript: takes persistent or transient, e.g. transcript: transient`,
		`app.yaml:34:6: meta_modes.m: expected a mapping, got the scalar "x"; a meta mode takes a mapping {trigger, agent, banner, label, group, default, persist, cwd, tools, return}, e.g. story: {trigger: meta, agent: story-author} (did you mean m: {trigger: "x"}?)`,
		`app.yaml:35:11: off_path: expected a mapping, got the scalar "/free"; off_path: takes a mapping {trigger, banner, return, agent, persona}, e.g. off_path: {trigger: "/freeform", agent: guide} (did you mean off_path: {trigger: "/free"}?)`,
		`app.yaml:36:10: decider: expected a mapping, got the scalar "judge"; decider: takes a mapping {agent, schema, prompt, threshold}, e.g. decider: {agent: judge, schema: schemas/decision.json} (did you mean decider: {agent: "judge"}?)`,
		`app.yaml:37:9: phases: expected a mapping, got a list; phases: takes a mapping {template, graph}, e.g. phases: {template: stage, graph: {draft: {next: {continue: review}}}}`,
	}
	got := loadErr(t, filepath.Join("testdata", "shapes", "app.yaml"), nil)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	want = []string{
		`scalars.yaml:3:36: intents.stop.priority: expected an integer, got the scalar "high"; priority: takes an integer (higher comes first in the menu), e.g. priority: 10`,
		`scalars.yaml:3:50: intents.stop.hidden: expected true or false, got the scalar "yes"; hidden: takes true or false, e.g. hidden: true`,
		`scalars.yaml:8:11: states.a.on.go: expected a list, got the scalar "b"; an intent's arm list takes a list of arms (or one arm) {target, when, default, effects, guard_hint, view, emit, push_history}, e.g. go: [{target: next, when: "world.ready"}] (did you mean go: [{target: b}]?)`,
		`scalars.yaml:9:14: states.a.on.stop[0]: expected a mapping, got the scalar "b"; an intent's arm list takes a list of arms (or one arm) {target, when, default, effects, guard_hint, view, emit, push_history}, e.g. go: [{target: next, when: "world.ready"}] (did you mean stop: [{target: b}]?)`,
		`scalars.yaml:10:21: states.a.relevant_world: expected a list, got the scalar "n"; relevant_world: takes a list of world keys, e.g. relevant_world: [loans, member] (did you mean relevant_world: [n]?)`,
		`scalars.yaml:11:21: states.a.agent_off_ramp: expected true or false, got the scalar "yes"; agent_off_ramp: takes true, false or a mapping {agent, persona, banner}, e.g. agent_off_ramp: {agent: guide}`,
		`scalars.yaml:12:25: states.a.contextual_routing: expected a mapping, got the scalar "true"; contextual_routing: takes a mapping {enabled, pending_plan_path, plan_accept_intent, plan_refine_intent, room_chat, help_chat, meta_chat}, e.g. contextual_routing: {enabled: true, room_chat: work}`,
		`scalars.yaml:13:17: states.b.terminal: expected true or false, got the scalar "no"; terminal: takes true or false, e.g. terminal: true`,
		`scalars.yaml:15:6: agents.g: expected a mapping, got the scalar "be nice"; a persona takes a mapping {system_prompt or system_prompt_path, model, tools, ...}, e.g. guide: {system_prompt: "You guide."} (did you mean g: {system_prompt: "be nice"}?)`,
		`scalars.yaml:16:16: providers.p: expected a mapping, got the scalar "glm"; a provider takes a mapping {model, effort, env}, e.g. glm: {model: glm-4.6} (did you mean p: {model: "glm"}?)`,
		`scalars.yaml:17:10: prompts: expected a mapping, got a list; prompts: takes a mapping {shared: [dirs], overlay: dir}, e.g. prompts: {shared: [../shared/prompts]}`,
	}
	got = loadErr(t, filepath.Join("testdata", "shapes", "scalars.yaml"), nil)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("scalars (-want +got):\n%s", d)
	}
}
