package orchestrator

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Hierarchical states: the session's state is a leaf path (bar.dark), or,
// inside a parallel state, a configuration printed as
// "<parallel>#<leaf>|<leaf>" (story.JoinConfig). This file is where the
// session reads and changes that configuration.

// leaves returns the parallel state ("" when none) and the active leaves.
func (s *Session) leaves() (string, []string) { return story.SplitConfig(s.state) }

// focus is the state that stands for the configuration: the leaf, or the
// parallel state.
func (s *Session) focus() *story.State {
	if p, _, ok := strings.Cut(s.state, "#"); ok {
		return s.story.States[p]
	}
	return s.story.States[s.state]
}

// inParallel reports whether the configuration is inside a parallel state.
func (s *Session) inParallel() bool { return strings.Contains(s.state, "#") }

// scopes lists the states an intent is looked up in, in order: each active
// leaf and its ancestors inside the parallel state (regions in
// configuration order, so the first region that handles an intent takes
// it), then the parallel state and its ancestors. For a plain leaf it is
// the leaf and its ancestors, innermost first.
func (s *Session) scopes() []*story.State {
	if !s.inParallel() {
		return s.ancestors(s.state)
	}
	p, ls := s.leaves()
	var out []*story.State
	for _, leaf := range ls {
		for _, st := range s.ancestors(leaf) {
			if st.Name == p {
				break
			}
			out = append(out, st)
		}
	}
	return append(out, s.ancestors(p)...)
}

// sourceLeaf is the active leaf a transition found at state owner starts
// from: the leaf under owner inside a parallel state's region, else the
// whole configuration ("").
func (s *Session) sourceLeaf(owner *story.State) string {
	if !s.inParallel() || owner == nil {
		return ""
	}
	p, ls := s.leaves()
	if story.IsWithin(p, owner.Name) {
		return ""
	}
	for _, leaf := range ls {
		if story.IsWithin(leaf, owner.Name) {
			return leaf
		}
	}
	return ""
}

// transition moves the configuration to target: inside a parallel state a
// target in one of its regions replaces that region's leaf and leaves the
// others alone; any other target exits every region (their leaves first,
// in reverse order), then the parallel state's ancestors up to the common
// one, and enters the target.
func (s *Session) transition(t *turnCtx, target string) error {
	err := s.move(t, target)
	s.pruneTimers()
	return err
}

func (s *Session) move(t *turnCtx, target string) error {
	if !s.inParallel() {
		return s.enterPath(t, s.state, target)
	}
	p, ls := s.leaves()
	if target != p && story.IsWithin(target, p) {
		region := p + "." + strings.SplitN(strings.TrimPrefix(target, p+"."), ".", 2)[0]
		kept := make([]string, 0, len(ls))
		cur := ""
		for _, leaf := range ls {
			if story.IsWithin(leaf, region) {
				cur = leaf
			} else {
				kept = append(kept, leaf)
			}
		}
		if cur == "" {
			cur = region
		}
		if err := s.enterPath(t, cur, target); err != nil {
			return err
		}
		s.state = story.JoinConfig(p, append(kept, s.state))
		return nil
	}
	for i := len(ls) - 1; i >= 0; i-- {
		for _, st := range s.ancestors(ls[i]) {
			if st.Name == p {
				break
			}
			s.state = st.Name
			if err := s.emit(t, trace.MachineStateExited{State: st.Name}); err != nil {
				return err
			}
		}
	}
	s.state = p
	return s.enterPath(t, p, target)
}

// descend enters a compound state's initial child, and every region of a
// parallel state, down to the leaves; runOnEnter is false when a flow
// seeds the session there. It returns the resulting state path.
func (s *Session) descend(t *turnCtx, path string, runOnEnter bool) (string, error) {
	st := s.story.States[path]
	switch {
	case st == nil:
		return path, nil
	case st.IsCompound():
		child, err := s.initialChild(t, st)
		if err != nil {
			return "", err
		}
		if err := s.enterOne(t, child, runOnEnter); err != nil {
			return "", err
		}
		return s.descend(t, child, runOnEnter)
	case st.IsParallel():
		leaves := make([]string, 0, len(st.Children))
		for _, r := range st.Children {
			if err := s.enterOne(t, r, runOnEnter); err != nil {
				return "", err
			}
			leaf, err := s.descend(t, r, runOnEnter)
			if err != nil {
				return "", err
			}
			leaves = append(leaves, leaf)
		}
		return story.JoinConfig(path, leaves), nil
	}
	return path, nil
}

// enterOne records the entry into one state and runs its on_enter.
func (s *Session) enterOne(t *turnCtx, path string, runOnEnter bool) error {
	s.state = path
	s.armTimer(s.story.States[path])
	if !runOnEnter {
		return nil
	}
	if err := s.emit(t, trace.MachineStateEntered{State: path}); err != nil {
		return err
	}
	st := s.story.States[path]
	if st.Import != nil && t.n > 0 { // the session's start keeps the world it was given
		if err := s.resetImport(t, st.Import); err != nil {
			return err
		}
	}
	return s.runEffects(t, st.OnEnter, "on_enter of "+path)
}

// resetImport sets an import's private world back to its defaults as a
// transition enters the import from outside (a key without a default
// becomes nil), so a second visit starts afresh, as Kitsoki's imports do;
// the wrapper's on_enter then writes world_in. Only keys that changed are
// written, in one world.update. The session's first entry (turn 0) is
// not a re-entry: the world it starts with, seeded keys included, stays.
func (s *Session) resetImport(t *turnCtx, imp *story.Import) error {
	var set map[string]any
	for _, v := range imp.World {
		var d any
		if v.HasDefault {
			d = DeepCopy(v.Default)
		}
		if reflect.DeepEqual(s.world[v.Name], d) {
			continue
		}
		if set == nil {
			set = map[string]any{}
		}
		set[v.Name] = d
		s.setWorld(v.Name, d)
	}
	if set == nil {
		return nil
	}
	return s.emit(t, trace.WorldUpdate{Set: set})
}

// initialChild is a compound state's initial child: the literal one, or
// the child its initial: template renders to.
func (s *Session) initialChild(t *turnCtx, st *story.State) (string, error) {
	var text string
	switch {
	case st.InitialValue != nil:
		v, err := st.InitialValue.Eval(s.env(t))
		if err != nil {
			return "", fault("initial of state %s (%s): %w", st.Name, st.InitialPos, err)
		}
		if v != nil {
			text = fmt.Sprint(v)
		}
	case st.InitialText != nil:
		out, err := st.InitialText.Render(s.stateEnv(t))
		if err != nil {
			return "", fault("initial of state %s (%s): %w", st.Name, st.InitialPos, err)
		}
		text = out
	default:
		return st.Initial, nil
	}
	child, ok := st.ChildNamed(text)
	if !ok {
		names := make([]string, len(st.Children))
		for i, c := range st.Children {
			names[i] = strings.TrimPrefix(c, st.Name+".")
		}
		return "", fault("initial of state %s (%s): the template rendered %q, which is not a child (children: %s)", st.Name, st.InitialPos, strings.TrimSpace(text), strings.Join(names, ", "))
	}
	return child, nil
}

// checkConfig checks a state path given to start a session in: a state,
// or a parallel configuration naming one leaf in every region.
func checkConfig(st *story.Story, path string) error {
	p, ls := story.SplitConfig(path)
	if p == "" {
		if _, ok := st.States[path]; !ok {
			return fmt.Errorf("root state %q does not exist%s", path, suggestQuoted(path, sortedKeys(st.States)))
		}
		return nil
	}
	ps := st.States[p]
	if ps == nil || !ps.IsParallel() {
		return fmt.Errorf("state path %q: %q is not a parallel state", path, p)
	}
	if len(ls) != len(ps.Children) {
		return fmt.Errorf("state path %q: name one leaf for each of the %d regions of %s", path, len(ps.Children), p)
	}
	seen := map[string]bool{}
	for _, leaf := range ls {
		region := ""
		for _, r := range ps.Children {
			if story.IsWithin(leaf, r) {
				region = r
			}
		}
		if _, ok := st.States[leaf]; !ok || region == "" || seen[region] {
			return fmt.Errorf("state path %q: %q is not a state of its own region of %s", path, leaf, p)
		}
		seen[region] = true
	}
	return nil
}

// viewStates are the states whose views make up the current view: the
// leaf's (a leaf without a view shows that of its nearest compound
// ancestor with one); inside a parallel state, the parallel state's own
// view, then each region's, in configuration order.
func (s *Session) viewStates() []*story.State {
	p, ls := s.leaves()
	if p == "" {
		return []*story.State{s.viewHolder(ls[0], "")}
	}
	out := []*story.State{s.story.States[p]}
	for _, leaf := range ls {
		if st := s.viewHolder(leaf, p); st != nil {
			out = append(out, st)
		}
	}
	return out
}

// viewHolder is the state whose view a leaf shows: the leaf, else its
// nearest ancestor with a view whose children it inherits (a compound
// state below stop).
func (s *Session) viewHolder(leaf, stop string) *story.State {
	st := s.story.States[leaf]
	for cur := st; cur != nil; {
		if cur.View != nil || cur.ViewDoc != nil {
			return cur
		}
		par := s.story.States[cur.Parent]
		if par == nil || par.Name == stop || !par.IsCompound() {
			break
		}
		cur = par
	}
	if stop != "" {
		return nil
	}
	return st
}

// regionEvent is one emit: event and the leaf it was emitted from.
type regionEvent struct{ name, from string }

// captureEvents renders an emit: item (a name or a list of names) and
// keeps the events for the sibling regions.
func (s *Session) captureEvents(t *turnCtx, e *story.Effect, where string, i int) error {
	return s.captureTree(t, e.Emit, fmt.Sprintf("%s, effect %d", where, i))
}

// captureTree renders emit: (a name or a list of names) and keeps the
// events; where names the emit: in a fault.
func (s *Session) captureTree(t *turnCtx, tree *expr.Tree, where string) error {
	v, err := tree.Eval(s.env(t))
	if err != nil {
		return fault("%s: emit: %w", where, err)
	}
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, n := range x {
			str, ok := n.(string)
			if !ok {
				return fault("%s: emit: an event name must be a string, got %s", where, showValue(n))
			}
			names = append(names, str)
		}
	default:
		return fault("%s: emit: want an event name or a list of names, got %s", where, showValue(v))
	}
	// The emitting region: the state being entered, or the leaf whose arm
	// is being taken.
	from := s.state
	if p, _ := s.leaves(); p != "" {
		from = t.src
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			t.events = append(t.events, regionEvent{name: n, from: from})
		}
	}
	return nil
}

// broadcast delivers the turn's emit: events inside a parallel state: each
// region other than the one that emitted the event takes the event's
// transition when its active leaf (or an ancestor inside the region) has
// arms for it, as if it were an intent with no slots. Outside a parallel
// state an event has no sibling region and is dropped. Events emitted
// while delivering are delivered in turn, up to MaxEmitDepth.
func (s *Session) broadcast(t *turnCtx) error {
	for n := 0; len(t.events) > 0; n++ {
		if n >= MaxEmitDepth {
			return fault("emit: events chained more than %d times in one turn", MaxEmitDepth)
		}
		ev := t.events[0]
		t.events = t.events[1:]
		p, _ := s.leaves()
		if p == "" {
			continue
		}
		for _, region := range s.story.States[p].Children {
			if ev.from != "" && story.IsWithin(ev.from, region) {
				continue
			}
			if err := s.deliver(t, p, region, ev.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliver takes event's transition in one region, if it has one.
func (s *Session) deliver(t *turnCtx, p, region, event string) error {
	_, ls := s.leaves()
	leaf := ""
	for _, l := range ls {
		if story.IsWithin(l, region) {
			leaf = l
		}
	}
	var arms []*story.Arm
	var owner *story.State
	for _, st := range s.ancestors(leaf) {
		if st.Name == p {
			break
		}
		if a, ok := st.On[event]; ok {
			arms, owner = a, st
			break
		}
	}
	if arms == nil {
		return nil
	}
	env := s.env(t)
	var arm *story.Arm
	for i, a := range arms {
		if a.Default || a.When == nil {
			arm = a
			break
		}
		ok, err := a.When.Eval(env)
		if err != nil {
			return fault("guard error in state %s, arm %d of on.%s (%s): when %q: %w", owner.Name, i, event, a.WhenPos, a.When.Source(), err)
		}
		if ok {
			arm = a
			break
		}
	}
	if arm == nil {
		return nil
	}
	to, stay := arm.Target, arm.Stay
	if arm.TargetTemplate != nil {
		v, err := arm.TargetTemplate.Eval(env)
		if err != nil {
			return fault("transition error in state %s, arm %d of on.%s (%s): target %q: %w", owner.Name, arm.Index, event, arm.TargetPos, arm.TargetTemplate.Source(), err)
		}
		text := ""
		if v != nil {
			text = fmt.Sprint(v)
		}
		if to, stay, err = s.story.ResolveTarget(leaf, text); err != nil {
			return fault("transition error in state %s, arm %d of on.%s (%s): target %q rendered %q, %w", owner.Name, arm.Index, event, arm.TargetPos, arm.TargetTemplate.Source(), text, err)
		}
	}
	if stay {
		to = s.state
	}
	if err := s.emit(t, trace.MachineTransition{From: s.state, To: to, Intent: event}); err != nil {
		return err
	}
	prev := t.src
	t.src = leaf
	err := s.runEffects(t, arm.Effects, "event "+event+" in "+region)
	if err == nil && arm.Emit != nil {
		err = s.captureTree(t, arm.Emit, fmt.Sprintf("arm %d of on.%s in %s", arm.Index, event, owner.Name))
	}
	t.src = prev
	if err != nil {
		return err
	}
	if stay {
		return nil
	}
	return s.transition(t, to)
}

// defaultIntentState is the state whose default_intent takes the free
// text no earlier tier resolved: the first of the scopes with one (a
// nested state inherits its enclosing state's).
func (s *Session) defaultIntentState() *story.State {
	if st := s.focus(); st != nil && st.DefaultIntent != "" {
		return st
	}
	for _, st := range s.scopes() {
		if st.DefaultIntent != "" {
			return st
		}
	}
	return nil
}
