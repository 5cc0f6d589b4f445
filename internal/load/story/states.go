package story

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

var stateKeys = &keySpec{
	v1: []string{"description", "view", "on_enter", "on", "terminal", "intents", "relevant_world", "default_intent",
		"intercept_drive", "type", "initial", "states", "relevant_slots", "timeout", "mode", "agent_off_ramp",
		"write_mode", "decider", "contextual_routing", "menu", "transcript", "footer", "theme"},
}

var armKeys = &keySpec{
	v1: []string{"target", "when", "default", "effects", "guard_hint", "emit", "view", "push_history"},
}

// Write modes (write_mode:) and deciders (decider:) a state may declare.
const (
	WriteOpen     = "open"
	WriteReadOnly = "read_only"
	DeciderHuman  = "human"
	DeciderLLM    = "llm"
)

// targetRef is a transition or on_error target, resolved once every state
// is known.
type targetRef struct {
	f     *file
	n     *yaml.Node
	path  string
	raw   string
	state *State
	set   func(target string, stay bool)
	// later, when set, takes a plain state name that names no state at
	// load: the target is resolved at run time instead (on_error).
	later func(raw string, at Pos)
}

// normStateName turns a state path written with slashes into its dotted
// form.
func normStateName(s string) string { return compose.NormState(s) }

func (l *loader) loadStates(f *file, e entry) {
	l.loadStateMap(f, e.val, "states", nil)
}

// loadStateMap reads a states: mapping: the top-level one (parent nil) or
// a compound or parallel state's children, named parent.child.
// configChars are the characters of a configuration's printed form
// (config.go): a state name holding one could not be read back.
const configChars = "#|()"

func (l *loader) loadStateMap(f *file, n *yaml.Node, base string, parent *State) {
	es, _ := l.entries(f, n, base)
	for _, se := range es {
		path := joinPath(base, se.name)
		name := normStateName(se.name)
		if name == "" || strings.HasPrefix(name, ExitStatePrefix) {
			l.errAt(f, se.key, path, "invalid state name %q (empty, or using the reserved prefix %q)", se.name, ExitStatePrefix)
			continue
		}
		if i := strings.IndexAny(name, configChars); i >= 0 {
			l.errAt(f, se.key, path, "state name %q contains %q, which writes a parallel state's configuration (p#a|b, nested in parentheses); rename the state without any of %s", se.name, name[i:i+1], configChars)
			continue
		}
		if parent != nil {
			if strings.Contains(name, ".") {
				l.errAt(f, se.key, path, "nested state name %q has a dot or slash; name the child alone (it is %s.<name>)", se.name, parent.Name)
				continue
			}
			name = parent.Name + "." + name
		}
		if prev := l.st.States[name]; prev != nil && (parent != nil || prev.Parent != "" && strings.Contains(name, ".")) {
			l.errAt(f, se.key, path, "state %q is declared twice: here and at %s (a nested state and a dotted name are the same path)", name, prev.Pos)
			continue
		}
		if !l.dup(f, entry{name: name, key: se.key}, path, "state", l.st.States[name] != nil) {
			continue
		}
		s := &State{Name: name, On: map[string][]*Arm{}, Pos: l.pos(f, se.key)}
		if parent != nil {
			s.Parent = parent.Name
			parent.Children = append(parent.Children, name)
		}
		l.st.States[name] = s
		l.stateOrder = append(l.stateOrder, name)
		l.loadState(f, se.val, path, s)
	}
}

func (l *loader) loadState(f *file, n *yaml.Node, path string, s *State) {
	fs, ok := l.fields(f, n, path, stateKeys)
	if !ok {
		return
	}
	strField(l, f, fs, path, "description", &s.Description)
	boolField(l, f, fs, path, "terminal", &s.Terminal)
	l.loadHierarchy(f, fs, path, s)
	l.loadStateSettings(f, fs, path, s)
	if v, ok := fs.get("contextual_routing"); ok {
		l.loadContextual(f, v, joinPath(path, "contextual_routing"), s)
	}
	if v, ok := fs.get("agent_off_ramp"); ok {
		l.loadOffRamp(f, v, joinPath(path, "agent_off_ramp"), s)
	}
	if v, ok := fs.get("timeout"); ok {
		l.loadTimeout(f, v, joinPath(path, "timeout"), s)
	}
	if v, ok := fs.get("view"); ok {
		l.loadView(f, v, joinPath(path, "view"), s)
	}
	l.loadRoomKeys(f, fs, path, s)
	if oe, ok := fs.get("on_enter"); ok {
		s.OnEnter = l.loadEffects(f, oe.val, joinPath(path, "on_enter"), effCtx{state: s, where: "on_enter"})
	}
	if on, ok := fs.get("on"); ok {
		l.loadOn(f, on.val, joinPath(path, "on"), s)
	}
	if in, ok := fs.get("intents"); ok {
		s.Intents = map[string]*Intent{}
		l.loadIntents(f, in.val, joinPath(path, "intents"), s.Intents, false)
	}
	l.loadRelevant(f, fs, path, s)
}

// loadStateSettings reads the state's one-word settings (default_intent,
// mode, intercept_drive, write_mode, decider), each checked against the
// values it may take. default_intent and a read-only write_mode are also
// kept as references, checked once the whole story is read.
func (l *loader) loadStateSettings(f *file, fs fieldSet, path string, s *State) {
	if di, ok := fs.get("default_intent"); ok {
		p := joinPath(path, "default_intent")
		if name, ok := l.str(f, di.val, p); ok && name != "" {
			s.DefaultIntent = name
			l.defaultIntents = append(l.defaultIntents, &nodeRef{f: f, n: di.val, path: p, value: name, state: s})
		}
	}
	if v, ok := fs.get("mode"); ok {
		p := joinPath(path, "mode")
		if m, ok := l.str(f, v.val, p); ok {
			if m != ModeConversational {
				l.errAt(f, v.val, p, "unknown state mode %q (the one mode is %q: an agent room, whose free text goes to its default_intent, else to the story's free-form fallback)%s", m, ModeConversational, didYouMean(m, []string{ModeConversational}))
			} else {
				s.Mode = m
			}
		}
	}
	if v, ok := fs.get("intercept_drive"); ok {
		p := joinPath(path, "intercept_drive")
		if mode, ok := l.str(f, v.val, p); ok {
			if mode != "rest" {
				l.errAt(f, v.val, p, "intercept_drive must be \"rest\" (the only mode), got %q", mode)
			} else {
				s.InterceptDrive = mode
			}
		}
	}
	if w, ok := fs.get("write_mode"); ok {
		p := joinPath(path, "write_mode")
		if m, ok := l.str(f, w.val, p); ok {
			switch m {
			case WriteOpen, WriteReadOnly:
				s.WriteMode = m
				if m == WriteReadOnly {
					l.readOnlyRooms = append(l.readOnlyRooms, &nodeRef{f: f, n: deref(w.val), path: p, value: m, state: s})
				}
			default:
				l.errAt(f, w.val, p, "unknown write_mode %q: use open or read_only%s", m, didYouMean(m, []string{WriteOpen, WriteReadOnly}))
			}
		}
	}
	if d, ok := fs.get("decider"); ok {
		p := joinPath(path, "decider")
		if m, ok := l.str(f, d.val, p); ok {
			switch m {
			case DeciderHuman, DeciderLLM:
				s.Decider = m
			default:
				l.errAt(f, d.val, p, "unknown decider %q: use human (the room always waits for the operator) or llm (its emit_intent chain always runs)%s",
					m, didYouMean(m, []string{DeciderHuman, DeciderLLM}))
			}
		}
	}
}

// loadRelevant reads relevant_slots and relevant_world, the keys a state
// shows its agent; each name is kept as a reference, checked once the
// whole story is read.
func (l *loader) loadRelevant(f *file, fs fieldSet, path string, s *State) {
	if rs, ok := fs.get("relevant_slots"); ok {
		items, _ := l.list(f, rs.val, joinPath(path, "relevant_slots"))
		for i, it := range items {
			p := indexPath(joinPath(path, "relevant_slots"), i)
			if k, ok := l.str(f, it, p); ok {
				s.RelevantSlots = append(s.RelevantSlots, k)
				l.slotRefs = append(l.slotRefs, &nodeRef{f: f, n: it, path: p, value: k, state: s})
			}
		}
	}
	if rw, ok := fs.get("relevant_world"); ok {
		items, _ := l.list(f, rw.val, joinPath(path, "relevant_world"))
		for i, it := range items {
			p := indexPath(joinPath(path, "relevant_world"), i)
			if k, ok := l.str(f, it, p); ok {
				s.RelevantWorld = append(s.RelevantWorld, k)
				l.worldRefs = append(l.worldRefs, &nodeRef{f: f, n: it, path: p, value: k, state: s})
			}
		}
	}
}

// loadOn reads on: intent -> arms. An intent may map to a list of arms or,
// as a shorthand, to a single arm.
func (l *loader) loadOn(f *file, n *yaml.Node, base string, s *State) {
	es, _ := l.entries(f, n, base)
	for _, ie := range es {
		path := joinPath(base, ie.name)
		if ie.name != "*" {
			l.armKeys = append(l.armKeys, &nodeRef{f: f, n: ie.key, path: path, value: ie.name, state: s})
		}
		d := deref(ie.val)
		var items []*yaml.Node
		single := false
		switch {
		case isNull(d):
			l.errAt(f, ie.key, path, "intent %q has no transitions; give it a list of arms", ie.name)
			continue
		case d.Kind == yaml.MappingNode:
			items, single = []*yaml.Node{d}, true
		default:
			var ok bool
			if items, ok = l.list(f, d, path); !ok {
				continue
			}
		}
		arms := make([]*Arm, 0, len(items))
		alwaysAt := -1 // index of the first arm that always wins when reached
		for i, it := range items {
			ap := indexPath(path, i)
			if single {
				ap = path
			}
			a, hasWhen := l.loadArm(f, it, ap, s, ie.name)
			if a == nil {
				continue
			}
			a.Index = i
			if alwaysAt >= 0 {
				l.warnAt(f, it, ap, "arm is never tried: arm [%d] before it always matches", alwaysAt)
			} else if a.Default || !hasWhen {
				alwaysAt = i
			}
			arms = append(arms, a)
		}
		s.On[ie.name] = arms
	}
}

// loadArm reads one arm; hasWhen reports whether it has a when: guard.
func (l *loader) loadArm(f *file, n *yaml.Node, path string, s *State, intent string) (_ *Arm, hasWhen bool) {
	a := &Arm{Pos: l.pos(f, deref(n))}
	fs, ok := l.fields(f, n, path, armKeys)
	if !ok {
		return nil, false
	}
	boolField(l, f, fs, path, "default", &a.Default)
	push := true
	boolField(l, f, fs, path, "push_history", &push)
	a.NoHistory = !push
	strField(l, f, fs, path, "guard_hint", &a.GuardHint)
	w, hasWhen := fs.get("when")
	if hasWhen {
		a.WhenPos = l.pos(f, deref(w.val))
		l.compileGuard(f, w.val, joinPath(path, "when"), func(g *expr.Guard) { a.When = g })
		if a.Default {
			l.warnAt(f, w.key, joinPath(path, "when"), "when is ignored on a default: true arm")
		}
	}
	if t, ok := fs.get("target"); ok {
		raw, ok := l.str(f, t.val, joinPath(path, "target"))
		switch {
		case ok && isTemplated(raw):
			// Rendered when the arm is taken; only the template is checked
			// here.
			a.TargetPos = l.pos(f, deref(t.val))
			l.compileValue(f, t.val, joinPath(path, "target"), func(x *expr.Value) { a.TargetTemplate = x })
		case ok:
			a.TargetPos = l.pos(f, deref(t.val))
			l.targets = append(l.targets, &targetRef{
				f: f, n: deref(t.val), path: joinPath(path, "target"), raw: raw, state: s,
				set: func(target string, stay bool) { a.Target, a.Stay = target, stay },
			})
		}
	} else {
		a.Target, a.Stay = s.Name, true
	}
	if ef, ok := fs.get("effects"); ok {
		a.Effects = l.loadEffects(f, ef.val, joinPath(path, "effects"),
			effCtx{state: s, where: "on." + intent, arm: a})
	}
	if v, ok := fs.get("view"); ok {
		l.loadArmView(f, v, joinPath(path, "view"), s, a)
	}
	if em, ok := fs.get("emit"); ok {
		// Events for the sibling regions, sent after the arm's effects.
		l.compileTree(f, em.val, joinPath(path, "emit"), func(t *expr.Tree) { a.Emit = t })
	}
	return a, hasWhen
}

// loadArmView reads a transition's view:, shown at the end of the turn in
// place of the target's: any form a state's view takes (a text template,
// a list of elements, extends/blocks, template_file).
func (l *loader) loadArmView(f *file, v entry, vp string, s *State, a *Arm) {
	d := deref(v.val)
	switch {
	case d == nil || isNull(d):
		l.errAt(f, v.key, vp, "view: is empty; give the transition's view (a text, a list of elements, or extends/blocks) or remove the key")
	case d.Kind == yaml.MappingNode && mapEntry(d, "template_file") != nil && mapEntry(d, "extends") == nil && mapEntry(d, "blocks") == nil:
		fs, ok := l.fields(f, d, vp, viewMapKeys)
		if ok {
			l.loadTemplateFile(f, fs.at("template_file"), joinPath(vp, "template_file"), func(t *expr.Text) { a.View = t })
		}
	case d.Kind == yaml.MappingNode || d.Kind == yaml.SequenceNode:
		holder := &State{Name: s.Name, Parent: s.Parent}
		l.loadView(f, v, vp, holder)
		a.ViewDoc = holder.ViewDoc
		for i := range l.annotateRefs {
			if l.annotateRefs[i].state == holder {
				l.annotateRefs[i].state = s
			}
		}
	default:
		l.compileViewText(f, v.val, vp, func(t *expr.Text) { a.View = t })
	}
}
