package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Parallel regions: their views, the events they send each other (emit:)
// and the done events of parallel states.

// viewStates are the states whose views make up the current view: the
// leaf's (a leaf without a view shows that of its nearest compound
// ancestor with one); inside a parallel state, the parallel state's own
// view, then each region's, in configuration order (a nested parallel
// state's view before its regions').
func (s *Session) viewStates() []*story.State {
	c := s.config()
	if !c.IsParallel() {
		return []*story.State{s.viewHolder(c.State, "")}
	}
	return s.regionViews([]*story.State{s.story.States[c.State]}, c)
}

func (s *Session) regionViews(out []*story.State, c *story.Config) []*story.State {
	for _, r := range c.Regions {
		if st := s.viewHolder(r.State, c.State); st != nil {
			out = append(out, st)
		}
		if r.IsParallel() {
			out = s.regionViews(out, r)
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

// regionEvent is one queued event: its name and the state it was emitted
// from ("" for the whole configuration); done names the parallel state a
// done event is about.
type regionEvent struct{ name, from, done string }

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
	// The emitting region: the state being entered, or the source of the
	// arm being taken.
	from := s.state
	if s.inParallel() {
		from = t.src
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			t.events = append(t.events, regionEvent{name: n, from: from})
		}
	}
	return nil
}

// broadcast delivers the turn's queued events. An emit: event goes to
// every region of every parallel state that is not the region it was
// emitted from (at each level of nesting): a region whose states have arms
// for it takes them, as if it were an intent with no slots. A done event
// goes to its parallel state and the states enclosing it. Outside a
// parallel state an event has no region to reach and is dropped. Events
// queued while delivering are delivered in turn, up to MaxEmitDepth.
func (s *Session) broadcast(t *turnCtx) error {
	if t.delivering {
		return nil
	}
	t.delivering = true
	defer func() { t.delivering = false }()
	for n := 0; len(t.events) > 0; n++ {
		if n >= MaxEmitDepth {
			return fault("emit: events chained more than %d times in one turn", MaxEmitDepth)
		}
		ev := t.events[0]
		t.events = t.events[1:]
		c := s.config()
		if !c.IsParallel() {
			continue
		}
		if ev.done != "" {
			if c.Find(ev.done) == nil {
				continue // moved away before its turn came
			}
			if err := s.deliver(t, s.ancestors(ev.done), s.doneNames(ev.done), "done event of "+ev.done); err != nil {
				return err
			}
			continue
		}
		for _, rr := range s.reached(c, ev.from, nil) {
			p := s.config().Find(rr.parallel)
			if p == nil {
				continue // an earlier delivery left it
			}
			i := p.RegionOf(rr.region)
			if i < 0 {
				continue
			}
			scopes := s.scopesBelow(nil, p.Regions[i], p.State)
			if err := s.deliver(t, scopes, []string{ev.name}, "event "+ev.name+" in "+rr.region); err != nil {
				return err
			}
		}
	}
	return nil
}

// regionRef names one region of a parallel state.
type regionRef struct{ parallel, region string }

// reached lists the regions an event emitted from state from reaches
// inside parallel configuration c: every region that does not hold from,
// in declaration order, and inside the region that holds it, the regions
// of a nested parallel state in the same way.
func (s *Session) reached(c *story.Config, from string, out []regionRef) []regionRef {
	for _, region := range s.story.States[c.State].Children {
		i := c.RegionOf(region)
		if i < 0 {
			continue
		}
		if from != "" && story.IsWithin(from, region) {
			if r := c.Regions[i]; r.IsParallel() {
				out = s.reached(r, from, out)
			}
			continue
		}
		out = append(out, regionRef{parallel: c.State, region: region})
	}
	return out
}

// doneNames are the names a done event of parallel state p is looked up
// under: done.state.<path>, and inside an imported story also the path as
// that story names it (without the import's alias).
func (s *Session) doneNames(p string) []string {
	names := []string{story.DoneEvent(p)}
	for _, st := range s.ancestors(p) {
		if st.Import != nil && st.Name != p {
			names = append(names, story.DoneEvent(strings.TrimPrefix(p, st.Name+".")))
		}
	}
	return names
}

// isDone reports whether configuration c is done: a terminal leaf, or a
// parallel state whose every region is done.
func (s *Session) isDone(c *story.Config) bool {
	if !c.IsParallel() {
		st := s.story.States[c.State]
		return st != nil && st.Terminal
	}
	for _, r := range c.Regions {
		if !s.isDone(r) {
			return false
		}
	}
	return true
}

// doneParallels lists the parallel states of c that are done, innermost
// first.
func (s *Session) doneParallels(c *story.Config, out []string) []string {
	for _, r := range c.Regions {
		if r.IsParallel() {
			out = s.doneParallels(r, out)
		}
	}
	if c.IsParallel() && s.isDone(c) {
		out = append(out, c.State)
	}
	return out
}

// queueDone queues a done event for each parallel state a move completed:
// done after it, not before.
func (s *Session) queueDone(t *turnCtx, before, after *story.Config) {
	if !after.IsParallel() {
		return
	}
	was := s.doneParallels(before, nil)
	for _, p := range s.doneParallels(after, nil) {
		if !slices.Contains(was, p) {
			t.events = append(t.events, regionEvent{name: story.DoneEvent(p), from: p, done: p})
		}
	}
}

// deliver takes an event's transition at the first of scopes with arms
// for one of names, if there is one and a guard lets it through.
func (s *Session) deliver(t *turnCtx, scopes []*story.State, names []string, where string) error {
	var arms []*story.Arm
	var owner *story.State
	event := ""
	for _, st := range scopes {
		for _, n := range names {
			if a, ok := st.On[n]; ok {
				arms, owner, event = a, st, n
				break
			}
		}
		if arms != nil {
			break
		}
	}
	if arms == nil {
		return nil
	}
	leaf := s.sourceOf(owner)
	from := leaf
	if from == "" {
		from = owner.Name
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
		if to, stay, err = s.story.ResolveTarget(from, text); err != nil {
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
	err := s.runEffects(t, arm.Effects, where)
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
