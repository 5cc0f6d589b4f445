package story

import (
	"fmt"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"go.yaml.in/yaml/v3"
)

// Phase templates (phase_templates:, phases:, checkpoint_intents:) declare a
// repeated room shape once and stamp it out once per phase of a graph. The
// expansion happens at load, after the story's own files are read: each
// template state becomes a concrete state, its name's {param} placeholders
// and its text's {{ tpl.X }} and {{ phase.next.ARC }} references replaced.
// A state the story writes out itself under states: wins over the stamped
// one. cycle_budgets caps how often an arc is taken; checkpoint_intents are
// merged into every stamped <phase>_awaiting_reply state. docs/stories.md
// ("Phase templates") describes the format.

var (
	phaseTemplateKeys = &keySpec{v1: []string{"parameters", "states"}}
	phaseParamKeys    = &keySpec{v1: []string{"type", "required", "default"}}
	phasesKeys        = &keySpec{v1: []string{"template", "graph"}}
	// phaseRef is a {{ tpl.X }} or {{ phase.next.ARC }} reference.
	phaseRef = regexp.MustCompile(`\{\{\s*(tpl|phase)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\s*\}\}`)
	// phaseNameParam is a {param} placeholder in a template state's name.
	phaseNameParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// phaseParamTypes are the parameter types a template may declare, by the
// kind of value each accepts.
var phaseParamTypes = map[string]string{
	"string": "scalar", "str": "scalar", "text": "scalar",
	"int": "int", "integer": "int",
	"float": "number", "number": "number",
	"bool": "bool", "boolean": "bool",
	"list": "list", "array": "list",
	"object": "map", "map": "map", "dict": "map",
	"any": "any",
}

// phaseEndings are next: targets that name a state as written rather than
// a phase (whose entry is <phase>_executing), as Kitsoki reads them.
var phaseEndings = []string{"", "terminated", "ended", "completed", "abandoned", "failed"}

type phaseTemplate struct {
	f      *file
	key    *yaml.Node
	params []*phaseParam
	states []entry
}

type phaseParam struct {
	name     string
	key      *yaml.Node
	typ      string
	required bool
	def      *yaml.Node
}

type phasesBlock struct {
	f        *file
	n        *yaml.Node
	template string
	tplNode  *yaml.Node
	graph    []entry
}

// phaseState is the loader's record of the phase templates seen in the
// story's files.
type phaseState struct {
	templates   map[string]*phaseTemplate
	order       []string
	block       *phasesBlock
	checkpoints map[string]*Intent
	cpOrder     []string
	cpAt        *nodeRef // where checkpoint_intents: is declared
}

func (l *loader) phaseSet() *phaseState {
	if l.phases == nil {
		l.phases = &phaseState{templates: map[string]*phaseTemplate{}, checkpoints: map[string]*Intent{}}
	}
	return l.phases
}

// refuseImportedPhases reports phase keys in a story folded in by imports:
// their states would need the import's names, which the fold gives before
// the expansion could run.
func (l *loader) ownRoom(name string) bool {
	if l.phaseSink != nil {
		return l.phaseSink.own[name] != nil
	}
	return l.st.States[name] != nil
}

func (l *loader) refuseImportedPhases(f *file, e entry) bool {
	if !f.imported {
		return false
	}
	l.errAt(f, e.key, e.name, "%s: in an imported story is not expanded by the importer; write the phases' rooms under states: in %s, or import a story whose phases are written out", e.name, f.rel)
	return true
}

func (l *loader) loadPhaseTemplates(f *file, e entry) {
	if l.refuseImportedPhases(f, e) {
		return
	}
	ps := l.phaseSet()
	es, _ := l.entries(f, e.val, "phase_templates")
	for _, te := range es {
		path := joinPath("phase_templates", te.name)
		if !l.dup(f, te, path, "phase_template", ps.templates[te.name] != nil) {
			continue
		}
		t := &phaseTemplate{f: f, key: te.key}
		ps.templates[te.name] = t
		ps.order = append(ps.order, te.name)
		fs, ok := l.fields(f, te.val, path, phaseTemplateKeys)
		if !ok {
			continue
		}
		if pe, ok := fs.get("parameters"); ok {
			t.params = l.loadPhaseParams(f, pe.val, joinPath(path, "parameters"))
		}
		if se, ok := fs.get("states"); ok {
			t.states, _ = l.entries(f, se.val, joinPath(path, "states"))
		}
		if len(t.states) == 0 {
			l.errAt(f, te.key, path, "a phase template needs states: (the rooms each phase gets, named like \"{id}_executing\")")
		}
	}
}

func (l *loader) loadPhaseParams(f *file, n *yaml.Node, base string) []*phaseParam {
	es, _ := l.entries(f, n, base)
	out := make([]*phaseParam, 0, len(es))
	for _, pe := range es {
		path := joinPath(base, pe.name)
		p := &phaseParam{name: pe.name, key: pe.key}
		out = append(out, p)
		fs, ok := l.fields(f, pe.val, path, phaseParamKeys)
		if !ok {
			continue
		}
		strField(l, f, fs, path, "type", &p.typ)
		if t, ok := fs.get("type"); ok {
			if _, known := phaseParamTypes[p.typ]; !known {
				// Kitsoki does not check the type; the values are not checked against it.
				l.warnAt(f, t.val, joinPath(path, "type"), "unknown parameter type %q is not checked: use string, int, float, bool, list, object or any%s",
					p.typ, didYouMean(p.typ, sortedKeys(boolSet(phaseParamTypes))))
			}
		}
		boolField(l, f, fs, path, "required", &p.required)
		if d, ok := fs.get("default"); ok && !isNull(d.val) {
			p.def = d.val
			l.checkPhaseParamValue(f, d.val, joinPath(path, "default"), p)
		}
	}
	return out
}

func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// checkPhaseParamValue reports a parameter value whose shape its declared
// type does not take.
func (l *loader) checkPhaseParamValue(f *file, n *yaml.Node, path string, p *phaseParam) {
	d := deref(n)
	if d == nil || isNull(d) {
		return
	}
	ok := true
	switch phaseParamTypes[p.typ] {
	case "scalar":
		ok = d.Kind == yaml.ScalarNode
	case "int":
		ok = d.Kind == yaml.ScalarNode && d.Tag == "!!int"
	case "number":
		ok = d.Kind == yaml.ScalarNode && (d.Tag == "!!int" || d.Tag == "!!float")
	case "bool":
		ok = d.Kind == yaml.ScalarNode && d.Tag == "!!bool"
	case "list":
		ok = d.Kind == yaml.SequenceNode
	case "map":
		ok = d.Kind == yaml.MappingNode
	}
	if !ok {
		// Kitsoki substitutes the value as written; so does kitsoki, and says so.
		l.warnAt(f, d, path, "parameter %q is declared type: %s, got %s; it is substituted as written", p.name, p.typ, kindName(d))
	}
}

func (l *loader) loadPhasesBlock(f *file, e entry) {
	if l.refuseImportedPhases(f, e) || !l.once(f, e) {
		return
	}
	ps := l.phaseSet()
	fs, ok := l.fields(f, e.val, "phases", phasesKeys)
	if !ok {
		return
	}
	b := &phasesBlock{f: f, n: e.key}
	ps.block = b
	if t, ok := fs.get("template"); ok {
		b.tplNode = t.val
		strField(l, f, fs, "phases", "template", &b.template)
	}
	if b.template == "" {
		l.errAt(f, e.key, "phases.template", "phases: needs template: (the phase_templates entry each phase instantiates)")
	}
	if g, ok := fs.get("graph"); ok {
		b.graph, _ = l.entries(f, g.val, "phases.graph")
	}
	if len(b.graph) == 0 {
		l.errAt(f, e.key, "phases.graph", "phases: needs graph: (one entry per phase: its parameters, next: arcs, cycle_budgets:)")
	}
}

func (l *loader) loadCheckpointIntents(f *file, e entry) {
	if l.refuseImportedPhases(f, e) {
		return
	}
	ps := l.phaseSet()
	if ps.cpAt == nil {
		ps.cpAt = &nodeRef{f: f, n: e.key, path: "checkpoint_intents"}
	}
	before := len(ps.checkpoints)
	l.loadIntents(f, e.val, "checkpoint_intents", ps.checkpoints, true)
	if len(ps.checkpoints) > before {
		es, _ := l.entries(f, e.val, "checkpoint_intents")
		for _, ie := range es {
			if !slices.Contains(ps.cpOrder, ie.name) {
				ps.cpOrder = append(ps.cpOrder, ie.name)
			}
		}
	}
}

// phaseInstance is one phase of the graph with its parameters resolved.
type phaseInstance struct {
	id     string
	f      *file
	key    *yaml.Node
	params map[string]string // parameter → its text
	next   map[string]string // arc → target state
	cycles []cycleBudget
	onEnt  *yaml.Node // on_enter: override of <id>_executing
}

type cycleBudget struct {
	arc string
	n   int64
	at  *yaml.Node
}

// expandPhases stamps out the phases once the story's own files are read.
func (l *loader) expandPhases() {
	ps := l.phases
	if ps == nil {
		return
	}
	if ps.block == nil {
		for _, name := range ps.order {
			t := ps.templates[name]
			l.warnAt(t.f, t.key, joinPath("phase_templates", name), "phase template %q is never instantiated (no phases: names it)", name)
		}
		if ps.cpAt != nil {
			l.warnAt(ps.cpAt.f, ps.cpAt.n, ps.cpAt.path, "checkpoint_intents: are merged into the <phase>_awaiting_reply rooms phases: stamps out, and this story declares no phases:")
		}
		return
	}
	b := ps.block
	if b.template == "" {
		return
	}
	tpl := ps.templates[b.template]
	if tpl == nil {
		l.errAt(b.f, b.tplNode, "phases.template", "phase template %q is not declared in phase_templates:%s", b.template, didYouMean(b.template, ps.order))
		return
	}
	for _, pe := range b.graph {
		inst := l.phaseInstance(b.f, pe, tpl)
		if inst != nil {
			l.stampPhase(tpl, inst)
		}
	}
}

// phaseInstance reads one phases.graph entry.
func (l *loader) phaseInstance(f *file, pe entry, tpl *phaseTemplate) *phaseInstance {
	path := joinPath("phases.graph", pe.name)
	inst := &phaseInstance{id: pe.name, f: f, key: pe.key, params: map[string]string{}, next: map[string]string{}}
	declared := map[string]*phaseParam{}
	for _, p := range tpl.params {
		declared[p.name] = p
		if p.def != nil {
			inst.params[p.name] = paramText(p.def)
		}
	}
	es, ok := l.entries(f, pe.val, path)
	if !ok {
		return nil
	}
	refs := templateRefs(tpl)
	for _, e := range es {
		ep := joinPath(path, e.name)
		switch e.name {
		case "next":
			nes, _ := l.entries(f, e.val, ep)
			for _, ne := range nes {
				if s, ok := l.str(f, ne.val, joinPath(ep, ne.name)); ok {
					inst.next[ne.name] = s
				}
			}
		case "cycle_budgets":
			ces, _ := l.entries(f, e.val, ep)
			for _, ce := range ces {
				if v, ok := l.integer(f, ce.val, joinPath(ep, ce.name)); ok {
					if v <= 0 {
						l.errAt(f, ce.val, joinPath(ep, ce.name), "a cycle budget must be a positive number of times, got %d", v)
						continue
					}
					inst.cycles = append(inst.cycles, cycleBudget{arc: ce.name, n: v, at: ce.key})
				}
			}
		case "on_enter":
			if _, ok := l.list(f, e.val, ep); ok {
				inst.onEnt = e.val
			}
		default:
			p := declared[e.name]
			if p == nil && !refs[e.name] {
				// As in Kitsoki, every key of a graph entry is a parameter
				// value; one the template neither declares nor reads is
				// most likely a typo, so the loader says so.
				l.warnAt(f, e.key, ep, "%q is not a parameter of phase template %q, which neither declares nor reads it (it declares %s; next:, cycle_budgets: and on_enter: are the other keys)%s",
					e.name, phaseTemplateName(l, tpl), paramNames(tpl), didYouMean(e.name, append(paramList(tpl), "next", "cycle_budgets", "on_enter")))
			}
			if p != nil {
				l.checkPhaseParamValue(f, e.val, ep, p)
			}
			inst.params[e.name] = paramText(e.val)
		}
	}
	inst.params["id"] = pe.name
	for _, p := range tpl.params {
		if _, ok := inst.params[p.name]; p.required && !ok {
			l.errAt(f, pe.key, path, "phase %q needs parameter %q (phase template %q declares it required)", pe.name, p.name, phaseTemplateName(l, tpl))
			return nil
		}
	}
	return inst
}

func phaseTemplateName(l *loader, tpl *phaseTemplate) string {
	for name, t := range l.phases.templates {
		if t == tpl {
			return name
		}
	}
	return ""
}

func paramList(tpl *phaseTemplate) []string {
	out := make([]string, 0, len(tpl.params))
	for _, p := range tpl.params {
		out = append(out, p.name)
	}
	return out
}

func paramNames(tpl *phaseTemplate) string {
	if len(tpl.params) == 0 {
		return "no parameters"
	}
	return strings.Join(paramList(tpl), ", ")
}

// templateRefs is every tpl.X name a template's states reference.
func templateRefs(tpl *phaseTemplate) map[string]bool {
	out := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode {
			for _, m := range phaseRef.FindAllStringSubmatch(n.Value, -1) {
				if m[1] == "tpl" {
					out[m[2]] = true
				}
			}
			for _, m := range phaseNameParam.FindAllStringSubmatch(n.Value, -1) {
				out[m[1]] = true
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, s := range tpl.states {
		walk(s.key)
		walk(s.val)
	}
	return out
}

// paramText is a parameter value as the text substituted for it.
func paramText(n *yaml.Node) string {
	d := deref(n)
	if d == nil || isNull(d) {
		return ""
	}
	if d.Kind == yaml.ScalarNode {
		return d.Value
	}
	var v any
	if err := d.Decode(&v); err != nil {
		return ""
	}
	return fmt.Sprint(v)
}

// phaseTarget turns a next: value into the state it enters: a phase's
// <phase>_executing, or an ending (terminated, ended_*, …) as written.
func phaseTarget(t string) string {
	if slices.Contains(phaseEndings, t) || strings.HasPrefix(t, "ended_") {
		return t
	}
	return t + "_executing"
}

// stampPhase adds the states of one phase.
func (l *loader) stampPhase(tpl *phaseTemplate, inst *phaseInstance) {
	stamped := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var awaiting, executing []string
	var handWritten []string
	for _, se := range tpl.states {
		name, bad := phaseName(se.name, inst.params)
		if bad != "" {
			l.errAt(tpl.f, se.key, joinPath("phase_templates", phaseTemplateName(l, tpl)+".states."+se.name),
				"state name %q uses {%s}, which is not a parameter of the template (%s)%s", se.name, bad, paramNames(tpl), didYouMean(bad, paramList(tpl)))
			continue
		}
		if l.ownRoom(name) {
			// Written out under states:: the story's own room wins.
			if strings.HasSuffix(name, "_executing") && len(inst.cycles) > 0 {
				handWritten = append(handWritten, name)
			}
			continue
		}
		body := compose.Copy(se.val)
		if !l.substPhase(tpl.f, body, inst) {
			continue
		}
		if strings.HasSuffix(name, "_executing") {
			if inst.onEnt != nil {
				ov := compose.Copy(inst.onEnt)
				if !l.substPhase(inst.f, ov, inst) {
					continue
				}
				setMapKey(body, "on_enter", ov)
			}
			l.addCycleArms(body, inst)
			executing = append(executing, name)
		}
		if strings.HasSuffix(name, "_awaiting_reply") {
			awaiting = append(awaiting, name)
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name, Line: se.key.Line, Column: se.key.Column}
		stamped.Content = append(stamped.Content, key, body)
	}
	if l.phaseSink != nil {
		l.phaseSink.stamp(l, stamped, awaiting, handWritten, inst, len(inst.cycles) > 0 && (len(executing) > 0 || len(handWritten) > 0))
		return
	}
	l.loadStateMap(tpl.f, stamped, "states", nil)
	for _, name := range awaiting {
		l.mergeCheckpoints(l.st.States[name])
	}
	for _, name := range handWritten {
		l.capHandWritten(l.st.States[name], inst)
	}
	if len(inst.cycles) > 0 && (len(executing) > 0 || len(handWritten) > 0) {
		for _, c := range inst.cycles {
			l.declareCounter(cycleCounter(inst.id, c.arc))
		}
	}
}

// phaseName replaces the {param} placeholders of a template state name;
// bad is the first placeholder no parameter fills.
func phaseName(name string, params map[string]string) (out, bad string) {
	out = phaseNameParam.ReplaceAllStringFunc(name, func(m string) string {
		k := m[1 : len(m)-1]
		if v, ok := params[k]; ok {
			return v
		}
		if bad == "" {
			bad = k
		}
		return m
	})
	return normStateName(out), bad
}

// substPhase replaces the {{ tpl.X }} and {{ phase.next.ARC }} references
// of every scalar under n (keys too), in place. An arm whose target names
// an arc this phase does not declare is left out, with a warning: the
// phase has no such way out. Any other unknown reference is an error.
func (l *loader) substPhase(f *file, n *yaml.Node, inst *phaseInstance) bool {
	ok := true
	l.dropMissingArcs(f, n, inst)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "{{") {
			n.Value = phaseRef.ReplaceAllStringFunc(n.Value, func(m string) string {
				g := phaseRef.FindStringSubmatch(m)
				switch {
				case g[1] == "tpl":
					if v, found := inst.params[g[2]]; found {
						return v
					}
					// As in Kitsoki, a reference the phase gives no value
					// for renders as nothing.
					l.warnAt(f, n, "phases.graph."+inst.id, "{{ tpl.%s }}: phase %q gives %q no value (no default either), so it is left empty%s", g[2], inst.id, g[2], didYouMean(g[2], sortedKeys(boolSet(inst.params))))
					return ""
				case g[2] == "next" && g[3] != "":
					if t, found := inst.next[g[3]]; found {
						return phaseTarget(t)
					}
					l.errAt(f, n, "phases.graph."+inst.id+".next", "{{ phase.next.%s }}: phase %q declares no next.%s%s", g[3], inst.id, g[3], didYouMean(g[3], sortedKeys(boolSet(inst.next))))
					ok = false
				default:
					l.errAt(f, n, "phases.graph."+inst.id, "%s: a phase template reads tpl.<parameter> and phase.next.<arc>", m)
					ok = false
				}
				return m
			})
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}

// dropMissingArcs removes the arms of a template state whose target is
// {{ phase.next.ARC }} for an arc this phase does not declare.
func (l *loader) dropMissingArcs(f *file, body *yaml.Node, inst *phaseInstance) {
	on := mapValue(body, "on")
	if on == nil || on.Kind != yaml.MappingNode {
		return
	}
	content := on.Content[:0:0]
	defer func() { on.Content = content }()
	for i := 1; i < len(on.Content); i += 2 {
		arms := on.Content[i]
		if arms.Kind == yaml.MappingNode { // the one-arm shorthand
			if l.missingArc(f, arms, inst) {
				continue
			}
			content = append(content, on.Content[i-1], arms)
			continue
		}
		if arms.Kind != yaml.SequenceNode {
			content = append(content, on.Content[i-1], arms)
			continue
		}
		kept := arms.Content[:0:0]
		for _, a := range arms.Content {
			if !l.missingArc(f, a, inst) {
				kept = append(kept, a)
			}
		}
		if len(kept) == 0 && len(arms.Content) > 0 {
			continue // the intent has no way out in this phase
		}
		arms.Content = kept
		content = append(content, on.Content[i-1], arms)
	}
}

// missingArc reports (with a warning) an arm whose whole target is
// {{ phase.next.ARC }} for an arc the phase does not declare.
func (l *loader) missingArc(f *file, arm *yaml.Node, inst *phaseInstance) bool {
	t := mapValue(arm, "target")
	if t == nil || t.Kind != yaml.ScalarNode {
		return false
	}
	m := phaseRef.FindStringSubmatch(t.Value)
	if m == nil || m[1] != "phase" || m[2] != "next" || m[3] == "" || strings.TrimSpace(t.Value) != m[0] {
		return false
	}
	if _, found := inst.next[m[3]]; found {
		return false
	}
	l.warnAt(f, t, "phases.graph."+inst.id+".next", "phase %q declares no next.%s: the arm targeting {{ phase.next.%s }} is left out of its rooms", inst.id, m[3], m[3])
	return true
}

func cycleCounter(phase, arc string) string { return "cycle__" + phase + "__" + arc }

// addCycleArms caps each budgeted arc of a stamped <phase>_executing state:
// the arc's arms (or, when the template writes none, an arm to the phase's
// next: target for the arc) count their passes in world.cycle__<phase>__<arc>
// and are taken only while the count is under the budget; past it, a
// default arm leads to <phase>_error.
func (l *loader) addCycleArms(body *yaml.Node, inst *phaseInstance) {
	if len(inst.cycles) == 0 || body.Kind != yaml.MappingNode {
		return
	}
	on := mapValue(body, "on")
	if on == nil || isNull(on) {
		on = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setMapKey(body, "on", on)
	}
	if on.Kind != yaml.MappingNode {
		return // loadState reports the shape
	}
	for _, c := range inst.cycles {
		counter := cycleCounter(inst.id, c.arc)
		guard := "world." + counter + " < " + strconv.FormatInt(c.n, 10)
		at := func(s string) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Line: c.at.Line, Column: c.at.Column}
		}
		incr := mapOf(at, "increment", mapOf(at, counter, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1", Line: c.at.Line, Column: c.at.Column}))
		over := mapOf(at, "target", at(inst.id+"_error"), "default", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"},
			"guard_hint", at("cycle budget exceeded for "+c.arc))
		arms := mapValue(on, c.arc)
		if arms != nil && arms.Kind == yaml.MappingNode {
			arms = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{arms}}
			setMapKey(on, c.arc, arms)
		}
		if arms == nil || arms.Kind != yaml.SequenceNode || len(arms.Content) == 0 {
			list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			if t := inst.next[c.arc]; t != "" {
				list.Content = append(list.Content, mapOf(at, "target", at(phaseTarget(t)), "when", at(guard),
					"effects", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{incr}}))
			}
			list.Content = append(list.Content, over)
			setMapKey(on, c.arc, list)
			continue
		}
		for _, a := range arms.Content {
			if a.Kind != yaml.MappingNode {
				continue
			}
			if d := mapValue(a, "default"); d != nil && d.Value == "true" {
				continue
			}
			w := guard
			if old := mapValue(a, "when"); old != nil && strings.TrimSpace(old.Value) != "" {
				w = "(" + strings.TrimSpace(old.Value) + ") && (" + guard + ")"
			}
			setMapKey(a, "when", at(w))
			effs := mapValue(a, "effects")
			if effs == nil || effs.Kind != yaml.SequenceNode {
				effs = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				setMapKey(a, "effects", effs)
			}
			effs.Content = append([]*yaml.Node{compose.Copy(incr)}, effs.Content...)
		}
		arms.Content = append(arms.Content, over)
	}
}

// capHandWritten applies a phase's cycle budgets to a <phase>_executing
// state the story wrote out itself, once its guards are compiled.
func (l *loader) capHandWritten(s *State, inst *phaseInstance) {
	if s == nil {
		return
	}
	for _, c := range inst.cycles {
		c := c
		counter := cycleCounter(inst.id, c.arc)
		guard := "world." + counter + " < " + strconv.FormatInt(c.n, 10)
		pos := l.pos(inst.f, c.at)
		incr := func() *Effect {
			return &Effect{Increment: []IncrementItem{{Key: counter, By: 1}}, Pos: pos}
		}
		over := &Arm{Default: true, GuardHint: "cycle budget exceeded for " + c.arc, Pos: pos}
		l.targets = append(l.targets, &targetRef{f: inst.f, n: c.at, path: "phases.graph." + inst.id + ".cycle_budgets." + c.arc,
			raw: inst.id + "_error", state: s, set: func(t string, stay bool) { over.Target, over.Stay = t, stay }})
		existing := s.On[c.arc]
		if len(existing) == 0 {
			var arms []*Arm
			if t := inst.next[c.arc]; t != "" {
				g, err := expr.CompileGuard(guard)
				if err != nil {
					l.errAt(inst.f, c.at, "phases.graph."+inst.id+".cycle_budgets."+c.arc, "invalid cycle guard: %v", err)
					continue
				}
				a := &Arm{When: g, WhenPos: pos, Effects: []*Effect{incr()}, Pos: pos}
				l.targets = append(l.targets, &targetRef{f: inst.f, n: c.at, path: "phases.graph." + inst.id + ".next." + c.arc,
					raw: phaseTarget(t), state: s, set: func(t string, stay bool) { a.Target, a.Stay = t, stay }})
				arms = append(arms, a)
			}
			over.Index = len(arms)
			s.On[c.arc] = append(arms, over)
			continue
		}
		over.Index = len(existing)
		s.On[c.arc] = append(existing, over)
		// The arms' own guards are compiled later: combine them then.
		l.finalizers = append(l.finalizers, func() {
			for _, a := range existing {
				if a.Default {
					continue
				}
				src := guard
				if a.When != nil {
					src = "(" + a.When.Source() + ") && (" + guard + ")"
				}
				g, err := expr.CompileGuard(src)
				if err != nil {
					l.errAt(inst.f, c.at, "phases.graph."+inst.id+".cycle_budgets."+c.arc, "invalid cycle guard: %v", err)
					continue
				}
				a.When = g
				a.Effects = append([]*Effect{incr()}, a.Effects...)
			}
		})
	}
}

// mergeCheckpoints adds the story's checkpoint_intents to a stamped
// <phase>_awaiting_reply state, after its own intents.
func (l *loader) mergeCheckpoints(s *State) {
	if s == nil || len(l.phases.checkpoints) == 0 {
		return
	}
	if s.Intents == nil {
		s.Intents = map[string]*Intent{}
	}
	for _, name := range l.phases.cpOrder {
		if _, own := s.Intents[name]; !own {
			if in := l.phases.checkpoints[name]; in != nil {
				s.Intents[name] = in
			}
		}
	}
}

// declareCounter declares a cycle counter the story did not (int, 0).
func (l *loader) declareCounter(name string) {
	if l.worldVar(name) == nil {
		l.st.World = append(l.st.World, &WorldVar{Name: name, Type: "int", Default: 0, HasDefault: true})
	}
}

// mapValue is the value of key k in mapping n (nil when absent).
func mapValue(n *yaml.Node, k string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return nil
}

// setMapKey sets key k of mapping n to v, replacing a value it has.
func setMapKey(n *yaml.Node, k string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Line: v.Line, Column: v.Column}, v)
}

// mapOf builds a mapping from key, value pairs (keys made with at).
func mapOf(at func(string) *yaml.Node, kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, at(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	if len(m.Content) > 0 {
		m.Line, m.Column = m.Content[0].Line, m.Content[0].Column
	}
	return m
}
