package story

import "strings"

// ContextualRouting is a state's contextual_routing: a routing tier that
// runs after the exact, synonym and template tiers and before the state's
// default_intent (docs/routing.md). Two parts:
//
//   - the plan-continuation guard (PendingPlanPath): while the world holds
//     a non-empty map at that path, an affirmation ("ok", "yes, go ahead")
//     routes to AcceptIntent and any other text to RefineIntent, the text
//     in its one required string slot;
//   - the room chat lane (RoomChat): any other free text is room work and
//     goes to that intent, the text in its one required string slot.
//
// The tier runs only with enabled: true (absent is false, as in Kitsoki);
// the intents are checked either way. With help_chat or meta_chat, free
// text the plan guard does not take is classified by the router agent, as
// Kitsoki's contextual router does: a help question opens the help_chat
// meta mode, a request to change the story the meta_chat one (each with the
// text as its first message; state and world stay), room work goes to
// room_chat, and anything else is routed to an intent of the room.
type ContextualRouting struct {
	Enabled         bool
	PendingPlanPath []string // world path, split at dots; nil = no plan guard
	AcceptIntent    string
	RefineIntent    string
	RefineSlot      string // the refine intent's one required string slot
	RoomChat        string // "" = no room lane
	RoomSlot        string
	// HelpChat and MetaChat name the meta modes (meta_modes: keys, or the
	// built-in story.ask and story.edit) the help and meta_edit classes
	// open; "" when the room has no such lane.
	HelpChat string
	MetaChat string
	Pos      Pos
}

// Defaults of the plan guard's intents.
const (
	DefaultPlanAcceptIntent = "accept_plan"
	DefaultPlanRefineIntent = "work"
)

var contextualKeys = &keySpec{v1: []string{"enabled", "room_chat", "help_chat", "meta_chat", "pending_plan_path", "plan_accept_intent", "plan_refine_intent"}}

// contextualRef is a contextual_routing intent to check once every file is
// loaded.
type contextualRef struct {
	nodeRef
	dst *string // where the intent's string slot goes; nil for the accept intent
}

func (l *loader) loadContextual(f *file, e entry, path string, s *State) {
	d := deref(e.val)
	fs, ok := l.fields(f, d, path, contextualKeys)
	if !ok {
		return
	}
	cr := &ContextualRouting{Pos: l.pos(f, d)}
	if v, ok := fs.get("enabled"); ok {
		if cr.Enabled, ok = l.boolean(f, v.val, joinPath(path, "enabled")); !ok {
			return
		}
	}
	var planPath string
	strField(l, f, fs, path, "pending_plan_path", &planPath)
	cr.AcceptIntent, cr.RefineIntent = DefaultPlanAcceptIntent, DefaultPlanRefineIntent
	strField(l, f, fs, path, "plan_accept_intent", &cr.AcceptIntent)
	strField(l, f, fs, path, "plan_refine_intent", &cr.RefineIntent)
	strField(l, f, fs, path, "room_chat", &cr.RoomChat)
	strField(l, f, fs, path, "help_chat", &cr.HelpChat)
	strField(l, f, fs, path, "meta_chat", &cr.MetaChat)
	for _, lane := range []struct{ key, name string }{{"help_chat", cr.HelpChat}, {"meta_chat", cr.MetaChat}} {
		if lane.name != "" {
			v, _ := fs.get(lane.key)
			l.laneRefs = append(l.laneRefs, nodeRef{f: f, n: v.val, path: joinPath(path, lane.key), value: lane.name, state: s})
		}
	}
	if planPath != "" {
		parts := strings.Split(strings.TrimPrefix(planPath, "world."), ".")
		for _, p := range parts {
			if p == "" {
				v, _ := fs.get("pending_plan_path")
				l.errAt(f, v.val, joinPath(path, "pending_plan_path"), "pending_plan_path %q is not a dotted world path (e.g. landing_note.plan)", planPath)
				return
			}
		}
		cr.PendingPlanPath = parts
		if v, ok := fs.get("pending_plan_path"); ok {
			l.worldRefs = append(l.worldRefs, &nodeRef{f: f, n: v.val, path: joinPath(path, "pending_plan_path"), value: parts[0], state: s})
		}
	}
	if cr.Enabled && cr.PendingPlanPath == nil && cr.RoomChat == "" && cr.HelpChat == "" && cr.MetaChat == "" {
		l.errAt(f, e.key, path, "contextual_routing routes nothing: set pending_plan_path (the plan guard) or a lane (room_chat, help_chat, meta_chat)")
		return
	}
	ref := func(key, name string, dst *string) {
		n := e.key
		if v, ok := fs.get(key); ok {
			n = v.val
		}
		l.contextualRefs = append(l.contextualRefs, contextualRef{nodeRef: nodeRef{f: f, n: n, path: joinPath(path, key), value: name, state: s}, dst: dst})
	}
	if cr.PendingPlanPath != nil {
		ref("plan_accept_intent", cr.AcceptIntent, nil)
		ref("plan_refine_intent", cr.RefineIntent, &cr.RefineSlot)
	}
	if cr.RoomChat != "" {
		ref("room_chat", cr.RoomChat, &cr.RoomSlot)
	}
	s.Contextual = cr
}

// checkContextual checks the intents contextual_routing names: the state
// (or an ancestor) has arms for each, and the refine and room intents
// declare the one required string slot that receives the text.
func (l *loader) checkContextual() {
	for _, r := range l.contextualRefs {
		s, name := r.state, r.value
		if !l.hasOwnArms(s, name) {
			l.errAt(r.f, r.n, r.path, "%s %q has no on: arms in state %q or its ancestors; add on.%s, or name an intent the state handles%s",
				lastKey(r.path), name, s.Name, name, didYouMean(name, l.armNames(s)))
			continue
		}
		if r.dst == nil {
			continue
		}
		def := l.intentFor(s, name)
		if def == nil {
			l.errAt(r.f, r.n, r.path, "%s %q is not declared in intents:; declare it with one required string slot for the text", lastKey(r.path), name)
			continue
		}
		slot, err := DefaultSlot(def)
		if err != nil {
			l.errAt(r.f, r.n, r.path, "%s %q: %v", lastKey(r.path), name, err)
			continue
		}
		*r.dst = slot
	}
}

// armNames lists the intents s and its ancestors have arms for.
func (l *loader) armNames(s *State) []string {
	var out []string
	for cur := s; cur != nil; cur = l.st.States[cur.Parent] {
		for k := range cur.On {
			if k != "*" {
				out = append(out, k)
			}
		}
		if cur.Parent == "" {
			break
		}
	}
	return out
}

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// PlanPending reports whether world holds a non-empty map at the plan
// guard's path.
func (c *ContextualRouting) PlanPending(world map[string]any) bool {
	if c == nil || c.PendingPlanPath == nil {
		return false
	}
	var cur any = world
	for _, p := range c.PendingPlanPath {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		cur = m[p]
	}
	m, ok := cur.(map[string]any)
	return ok && len(m) > 0
}

// Lanes reports whether the tier classifies free text with the router
// agent (it has a help or a meta lane).
func (c *ContextualRouting) Lanes() bool { return c != nil && (c.HelpChat != "" || c.MetaChat != "") }

// builtinMetaModes are the meta modes a contextual lane may name without
// declaring them, as Kitsoki's built-in story.* group: story.edit (the
// story author, the group's default verb) and story.ask (read-only
// questions about the story).
var builtinMetaModes = map[string]Overlay{
	"story.edit": {Name: "story.edit", Meta: true, Trigger: "/edit", Group: "story", Default: true, Exit: "/onpath", Persist: true, Agent: BuiltinStoryAuthor},
	"story.ask":  {Name: "story.ask", Meta: true, Trigger: "/ask", Group: "story", Exit: "/onpath", Persist: true, Agent: BuiltinStoryExplainer},
}

// checkLanes checks the meta modes help_chat and meta_chat name: declared
// ones, or a built-in one, which the story then gets.
func (l *loader) checkLanes() {
	for _, r := range l.laneRefs {
		if l.st.MetaModes[r.value] != nil {
			continue
		}
		b, ok := builtinMetaModes[r.value]
		if !ok {
			names := []string{"story.ask", "story.edit"}
			for n := range l.st.MetaModes {
				names = append(names, n)
			}
			l.errAt(r.f, r.n, r.path, "%s %q is not a meta mode: name a meta_modes: entry or the built-in story.ask or story.edit%s", lastKey(r.path), r.value, didYouMean(r.value, names))
			continue
		}
		o := b
		o.Pos = l.pos(r.f, r.n)
		o.Invoke = &Invoke{Name: OverlayHandler, Pos: o.Pos}
		if l.st.MetaModes == nil {
			l.st.MetaModes = map[string]*Overlay{}
		}
		l.st.MetaModes[o.Name] = &o
		if l.st.Agents[o.Agent] == nil {
			l.st.Agents[o.Agent] = builtinPersona(o.Agent)
		}
	}
}
