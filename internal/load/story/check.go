package story

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// finish completes the story once every file is loaded: defaults are added,
// and every check that needs the whole story runs.
func (l *loader) finish() {
	l.injectDefaultPlugin()
	l.seedWorld()
	l.addExitStates()
	l.computeParents()
	l.finishImports()
	l.checkExports()
	for _, t := range l.targets {
		l.resolveTarget(t)
	}
	l.checkRoot()
	ids := map[string]Pos{}
	for _, r := range l.effects {
		l.checkEffect(r)
		l.checkInvokeID(r, ids)
		l.checkGrammarSubset(r)
	}
	l.checkWorldRefs()
	l.checkSlotRefs()
	l.checkGuardReads()
	l.checkTextReads()
	l.checkBinds()
	l.checkArmIntents()
	l.checkMenus()
	l.checkAnnotations()
	l.noteProposals()
	l.checkDeciderAgent()
	l.checkSynonyms()
	l.checkDefaultIntents()
	l.checkContextual()
	l.checkLanes()
	l.checkOffRamps()
	l.checkOverlays()
	l.checkRoutingAgents()
	l.checkPersonaProviders()
	l.checkReadOnlyRooms()
	l.markDecisionGates()
	l.applyFallbacks()
}

// markDecisionGates sets State.DecisionGate: the state has a forward
// intent (an on: key, not "*", with an arm that leaves the state for
// another one that is not an exit) that no emit_intent of its on_enter
// fires, so only the operator can take it. A state with a templated
// emit_intent is never a gate (any intent may be the one it fires).
func (l *loader) markDecisionGates() {
	emitted := map[*State]map[string]bool{}
	templated := map[*State]bool{}
	for _, r := range l.effects {
		st := r.ctx.state
		switch {
		case st == nil || r.e.EmitIntent == nil || r.ctx.arm != nil:
			// on_enter emits only: an arm's fire from its target
		case r.emitName == "":
			templated[st] = true
		default:
			if emitted[st] == nil {
				emitted[st] = map[string]bool{}
			}
			emitted[st][r.emitName] = true
		}
	}
	for _, st := range l.st.States {
		if templated[st] {
			continue
		}
		for intent, arms := range st.On {
			if intent == "*" || emitted[st][intent] {
				continue
			}
			for _, a := range arms {
				forward := a.TargetTemplate != nil ||
					(!a.Stay && a.Target != st.Name && !strings.HasPrefix(a.Target, ExitStatePrefix))
				if forward {
					st.DecisionGate = true
					break
				}
			}
		}
	}
}

// checkReadOnlyRooms checks each write_mode: read_only room: it must
// dispatch an agent (a host.agent.* invoke, or an iface.* one that may be
// bound to one, in its on_enter or arms), and no agent it names may
// declare external_side_effect: true.
func (l *loader) checkReadOnlyRooms() {
	for _, r := range l.readOnlyRooms {
		agentCall := false
		for _, e := range l.effects {
			in := e.e.Invoke
			if e.ctx.state != r.state || in == nil {
				continue
			}
			if strings.HasPrefix(in.Name, "host.agent.") || strings.HasPrefix(in.Name, "iface.") {
				agentCall = true
			}
			if p := l.st.Agents[e.withAgent]; e.withAgent != "" && p != nil && p.ExternalSideEffect != nil && *p.ExternalSideEffect {
				l.errAt(r.f, r.n, r.path, "write_mode: read_only conflicts with agent %q (invoked at %s), which declares external_side_effect: true; "+
					"make the room open or the agent external_side_effect: false", e.withAgent, l.pos(e.f, e.invokeNode))
			}
		}
		if !agentCall {
			l.errAt(r.f, r.n, r.path, "write_mode: read_only restricts the agents a room dispatches, and state %q invokes none; "+
				"add the host.agent.* invoke or remove write_mode", r.state.Name)
		}
	}
}

// checkPersonaProviders checks each agents.<name>.provider against
// providers:.
func (l *loader) checkPersonaProviders() {
	names := slices.Sorted(maps.Keys(l.st.Providers))
	for _, r := range l.personaProviders {
		if _, ok := l.st.Providers[r.value]; !ok {
			l.errAt(r.f, r.n, r.path, "provider %q is not declared in providers:%s", r.value, didYouMean(r.value, names))
		}
	}
}

// seededWorld are the world keys every story has (story-format.md §5),
// added with these defaults when the story does not declare them.
var seededWorld = []WorldVar{
	{Name: "session_cost_usd", Type: "float", Default: 0.0, HasDefault: true},
	{Name: "turn_cost_usd", Type: "float", Default: 0.0, HasDefault: true},
	{Name: "last_error", Type: "string", Default: "", HasDefault: true},
	{Name: "write_mode_scope", Type: "string", Default: "", HasDefault: true},
	// session_id is the run's session id, filled in when the session
	// starts unless the world's seed gives one (orchestrator.seedSessionID).
	{Name: "session_id", Type: "string", Default: "", HasDefault: true},
}

// ideWorld is Kitsoki's engine-seeded editor-link key: {connected: bool},
// projected at the start of every turn of a live run from the run's editor
// (orchestrator.WithIDEProbe; false in flows and replays). It is added to
// the world when a guard reads it and the story does not declare it.
var ideWorld = WorldVar{Name: "ide", Type: "object", Default: map[string]any{"connected": false}, HasDefault: true}

func (l *loader) seedWorld() {
	for _, w := range seededWorld {
		if l.worldVar(w.Name) == nil {
			v := w
			l.st.World = append(l.st.World, &v)
		}
	}
}

// addExitStates adds the terminal state __exit__<name> for every exit.
func (l *loader) addExitStates() {
	for _, x := range l.exitOrder {
		name := ExitStatePrefix + x.x.Name
		l.st.States[name] = &State{
			Name: name, Description: x.x.Description, Terminal: true, Exit: x.x.Name,
			On: map[string][]*Arm{}, Pos: l.pos(x.f, x.n),
		}
	}
}

// computeParents links each dotted state to its nearest declared ancestor:
// a.b.c has parent a.b if declared, else a if declared, else none.
func (l *loader) computeParents() {
	for _, name := range l.stateOrder {
		s := l.st.States[name]
		for p := name; ; {
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				break
			}
			p = p[:i]
			if _, ok := l.st.States[p]; ok {
				s.Parent = p
				break
			}
		}
	}
}

// userStates returns the declared state names, sorted, for suggestions.
func (l *loader) userStates() []string {
	names := slices.Clone(l.stateOrder)
	sort.Strings(names)
	return names
}

// unknownState formats the message for a state name that does not exist.
func (l *loader) unknownState(raw, norm string) string {
	msg := fmt.Sprintf("unknown state %q", raw)
	if norm != raw {
		msg += fmt.Sprintf(" (resolved: %q)", norm)
	}
	return msg + didYouMean(norm, l.userStates())
}

// resolveTarget resolves a transition or on_error target: "." stays, a
// state path (dots, or slashes) names a state, "@exit:<name>" names an exit.
func (l *loader) resolveTarget(t *targetRef) {
	raw := strings.TrimSpace(t.raw)
	switch {
	case raw == "":
		l.errAt(t.f, t.n, t.path, "target is empty (use \".\" to stay in the state)")
	case raw == ".":
		t.set(t.state.Name, true)
	case strings.HasPrefix(raw, "@exit:"):
		name := strings.TrimPrefix(raw, "@exit:")
		if l.st.Exits[name] == nil {
			if !l.exitTargets[t.n] {
				l.errAt(t.f, t.n, t.path, "@exit:%s referenced but not declared in exits:", name)
			}
			return
		}
		t.set(ExitStatePrefix+name, false)
	case isTemplated(raw):
		// Only an arm's target: may be a template (loadArm compiles it);
		// on_error is the one other target.
		l.errAt(t.f, t.n, t.path, "on_error must name a state, \".\" or @exit:<name>; a template target is allowed only in an arm's target:")
	default:
		from := ""
		if t.state != nil {
			from = t.state.Name
		}
		path, norm, ok := resolveStatePath(l.st.States, from, raw)
		if !ok || strings.HasPrefix(path, ExitStatePrefix) || strings.HasPrefix(norm, ExitStatePrefix) {
			if t.later != nil && !l.exitTargets[t.n] && !strings.HasPrefix(norm, ExitStatePrefix) {
				// Kitsoki accepts an on_error naming a state the story
				// does not declare; it is resolved when the call fails.
				l.warnAt(t.f, t.n, t.path, "%s; kept as written and looked up when the call fails (a failure it cannot resolve ends the turn with an error)", l.unknownState(raw, norm))
				t.later(norm, l.pos(t.f, t.n))
				return
			}
			if x := l.exitDeferred[t.n]; x != nil {
				if !x.reported {
					x.reported = true
					l.errAt(x.ref.f, x.ref.n, x.ref.path, "%s: it is neither a state of this story nor of a story importing it", l.unknownState(x.ref.value, normStateName(x.ref.value)))
				}
				return
			}
			if !l.exitTargets[t.n] {
				l.errAt(t.f, t.n, t.path, "%s", l.unknownState(raw, norm))
			}
			return
		}
		if st := l.st.States[path]; st != nil && st.Import != nil {
			path = st.Import.Entry
		}
		t.set(path, false)
	}
}

func (l *loader) checkRoot() {
	if l.rootRef == nil {
		if l.rootParsed {
			l.diags = append(l.diags, Diagnostic{Pos: l.rootPos, Message: "root: is required (the name of the state the story starts in)"})
		}
		return
	}
	r := l.rootRef
	norm := normStateName(r.value)
	st, ok := l.st.States[norm]
	if !ok || norm == "" || strings.HasPrefix(norm, ExitStatePrefix) {
		l.errAt(r.f, r.n, r.path, "%s", l.unknownState(r.value, norm))
		return
	}
	if st.Import != nil {
		norm = st.Import.Entry
	}
	l.st.Root = norm
}

// checkEffect runs the whole-story checks of one effect: hosts allow-list,
// with.agent persona, with.provider, agent_plugins alias, and emit_intent
// arms.
func (l *loader) checkEffect(r *effectRef) {
	st := r.ctx.state
	l.checkProvided(r)
	if in := r.e.Invoke; in != nil {
		if len(l.st.Hosts) > 0 && in.Name != "" && !isTemplated(in.Name) && !slices.Contains(l.st.Hosts, in.Name) && !l.hostPluginProvides(in.Name) && !l.interfaceDeclared(in.Name) {
			l.errAt(r.f, r.invokeNode, joinPath(r.path, "invoke"), "state %q: %s invoke %q is not declared in app hosts",
				st.Name, r.ctx.where, in.Name)
		}
		if r.withAgent != "" && l.st.Agents[r.withAgent] == nil {
			l.errAt(r.f, r.withAgentNode, joinPath(r.path, "with.agent"), "with.agent %q is not declared in agents", r.withAgent)
		}
		if r.withProvider != "" {
			if _, ok := l.st.Providers[r.withProvider]; !ok {
				l.errAt(r.f, r.withProviderNode, joinPath(r.path, "with.provider"), "with.provider %q is not declared in providers",
					r.withProvider)
			}
		}
		if in.Agent != "" && !isTemplated(in.Agent) {
			if _, ok := l.st.Plugins[in.Agent]; !ok {
				aliases := make([]string, 0, len(l.st.Plugins))
				for a := range l.st.Plugins {
					aliases = append(aliases, a)
				}
				sort.Strings(aliases)
				l.errAt(r.f, r.agentNode, joinPath(r.path, "agent"), "agent %q is not declared in agent_plugins%s",
					in.Agent, didYouMean(in.Agent, aliases))
			}
		}
	}
	if r.emitName != "" {
		// An emit_intent fires on the state the machine is in after the
		// chain: the declaring state for on_enter, the arm's target for an
		// arm effect.
		at := st
		if a := r.ctx.arm; a != nil {
			if a.Target == "" {
				return // a templated target, or one that did not resolve (already reported)
			}
			at = l.st.States[a.Target]
		}
		if !l.hasArms(at, r.emitName) {
			l.errAt(r.f, r.emitNode, joinPath(r.path, "emit_intent"),
				"emit_intent %q is not declared on state %q's on: arcs (nor any ancestor's)", r.emitName, at.Name)
		}
	}
}

// checkInvokeID warns when two invokes share an id: eval tooling and flow
// fixtures find a call site by its id, so a repeated one is ambiguous.
func (l *loader) checkInvokeID(r *effectRef, seen map[string]Pos) {
	in := r.e.Invoke
	if in == nil || in.ID == "" || isTemplated(in.ID) {
		return
	}
	if first, ok := seen[in.ID]; ok {
		l.warnAt(r.f, r.idNode, joinPath(r.path, "id"), "invoke id %q is also used at %s; call sites are found by id, so keep ids unique",
			in.ID, first)
		return
	}
	seen[in.ID] = l.pos(r.f, r.idNode)
}

// hasArms reports whether s or an ancestor has arms for intent (or "*").
func (l *loader) hasArms(s *State, intent string) bool {
	for s != nil {
		if _, ok := s.On[intent]; ok {
			return true
		}
		if _, ok := s.On["*"]; ok {
			return true
		}
		if s.Parent == "" {
			return false
		}
		s = l.st.States[s.Parent]
	}
	return false
}

// checkWorldRefs checks relevant_world and exits.requires name declared
// world keys.
func (l *loader) checkWorldRefs() {
	var names []string
	for _, w := range l.st.World {
		names = append(names, w.Name)
	}
	for _, r := range l.worldRefs {
		if l.worldVar(r.value) == nil {
			l.errAt(r.f, r.n, r.path, "world key %q is not declared in world:%s", r.value, didYouMean(r.value, names))
		}
	}
}

// runtimeWorld are the world keys the runtime writes that a story need not
// declare: host_error is set when a host call fails (story-format.md §5);
// last_job_id, last_job_status and last_job_result when a background job
// starts and ends.
var runtimeWorld = []string{"host_error", "last_job_id", "last_job_status", "last_job_result"}

// checkGuardReads warns about a guard (an arm's or an effect's when:) that
// reads a world key by name that world: does not declare (the seeded keys
// and runtimeWorld count as declared): a misspelt key reads nil, and the
// guard is quietly false or fails at run time. The warning points at the
// key inside the expression when the scalar's text can be located.
func (l *loader) checkGuardReads() {
	names := make([]string, 0, len(l.st.World)+len(runtimeWorld))
	for _, w := range l.st.World {
		names = append(names, w.Name)
	}
	names = append(names, runtimeWorld...)
	for _, r := range l.guards {
		for _, rd := range r.g.WorldReads() {
			if slices.Contains(names, rd.Key) {
				continue
			}
			if rd.Key == ideWorld.Name {
				v := ideWorld
				v.Default = map[string]any{"connected": false}
				l.st.World = append(l.st.World, &v)
				names = append(names, v.Name)
				continue
			}
			p, ok := scalarOffsetPos(r.f, r.n, rd.Line, rd.Col)
			if !ok {
				p = posOf(r.f, r.n)
			}
			l.warns = append(l.warns, Diagnostic{Pos: p, Path: r.path,
				Message: fmt.Sprintf("the guard reads world key %q, which is not declared in world:%s", rd.Key, didYouMean(rd.Key, names))})
		}
	}
}

// checkArmIntents warns about on: keys that name no declared intent (global,
// or local to the state or an ancestor); they can still be reached through
// emit_intent.
func (l *loader) checkArmIntents() {
	for _, r := range l.armKeys {
		if l.intentDeclared(r.state, r.value) {
			continue
		}
		if IsDoneEvent(r.value) {
			l.checkDoneArm(r)
			continue
		}
		names := make([]string, 0, len(l.st.Intents))
		for n := range l.st.Intents {
			names = append(names, n)
		}
		sort.Strings(names)
		l.warnAt(r.f, r.n, r.path, "intent %q is not declared in intents:%s; only emit_intent can reach this arm",
			r.value, didYouMean(r.value, names))
	}
}

func (l *loader) intentDeclared(s *State, name string) bool {
	if l.st.Intents[name] != nil {
		return true
	}
	for s != nil {
		if s.Intents[name] != nil {
			return true
		}
		if s.Parent == "" {
			break
		}
		s = l.st.States[s.Parent]
	}
	return false
}

// interfaceDeclared reports whether an invoke is an operation of a
// declared host interface, which hosts: allows implicitly.
func (l *loader) interfaceDeclared(name string) bool {
	_, ok := l.st.InterfaceOf(name)
	return ok
}

// checkSlotRefs warns unless each relevant_slots entry is a slot of an
// intent the state takes (an intent its on: or an ancestor's names, global
// or local).
func (l *loader) checkSlotRefs() {
	for _, r := range l.slotRefs {
		var names []string
		seen := map[string]bool{}
		for s := r.state; s != nil; s = l.st.States[s.Parent] {
			for intent := range s.On {
				in := l.intentFor(r.state, intent)
				if in == nil {
					continue
				}
				for _, sl := range in.SlotOrder {
					if !seen[sl] {
						seen[sl] = true
						names = append(names, sl)
					}
				}
			}
			if s.Parent == "" {
				break
			}
		}
		if seen[r.value] {
			continue
		}
		sort.Strings(names)
		if len(names) == 0 {
			l.warnAt(r.f, r.n, r.path, "slot %q: no intent this state takes declares slots", r.value)
			continue
		}
		l.warnAt(r.f, r.n, r.path, "slot %q is not a slot of an intent this state takes (slots: %s)%s", r.value, strings.Join(names, ", "), didYouMean(r.value, names))
	}
}

// ModeConversational is the mode: of an agent room.
const ModeConversational = "conversational"

// InheritedDefaultIntent is the state that supplies s's default_intent:
// s itself, else its nearest enclosing state with one; nil when none does.
func (s *State) InheritedDefaultIntent(st *Story) *State {
	for cur := s; cur != nil; cur = st.States[cur.Parent] {
		if cur.DefaultIntent != "" {
			return cur
		}
		if cur.Parent == "" {
			break
		}
	}
	return nil
}

// checkDoneArm warns about a done.state.<path> arm that no done event can
// reach: path must be a parallel state at or inside the arm's state (in an
// imported story, the path as that story names it).
func (l *loader) checkDoneArm(r *nodeRef) {
	name := strings.TrimPrefix(r.value, DoneEventPrefix)
	var pars []string
	for _, st := range l.st.States {
		if !st.IsParallel() {
			continue
		}
		pars = append(pars, st.Name)
		if (st.Name == name || strings.HasSuffix(st.Name, "."+name)) && (r.state == nil || IsWithin(st.Name, r.state.Name)) {
			return
		}
	}
	sort.Strings(pars)
	where := "this story"
	if r.state != nil {
		where = r.state.Name
	}
	l.warnAt(r.f, r.n, r.path, "%q names no parallel state at or inside %s, so no done event reaches this arm (parallel states: %s)%s",
		r.value, where, strings.Join(pars, ", "), didYouMean(name, pars))
}
