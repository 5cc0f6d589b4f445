package orchestrator

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Hierarchical states: the session's state is a leaf path (bar.dark), or,
// inside a parallel state, a configuration (story.Config) printed as
// "<parallel>#<leaf>|<leaf>", a nested parallel state's configuration in
// parentheses. This file is where the session reads and changes that
// configuration; regions.go delivers events between regions.

// config is the session's state as a configuration, parsed once per
// change of state.
func (s *Session) config() *story.Config {
	if s.cfg == nil || s.cfgText != s.state {
		c, err := story.ParseConfig(s.state)
		if err != nil {
			c = story.Leaf(s.state)
		}
		s.cfg, s.cfgText = c, s.state
	}
	return s.cfg
}

// setConfig makes c the session's state.
func (s *Session) setConfig(c *story.Config) {
	s.state = c.String()
	s.cfg, s.cfgText = c, s.state
}

// leaves returns the active leaves, in configuration order.
func (s *Session) leaves() []string { return s.config().Leaves() }

// focus is the state that stands for the configuration: the leaf, or the
// outermost parallel state.
func (s *Session) focus() *story.State { return s.story.States[s.config().State] }

// inParallel reports whether the configuration is inside a parallel state.
func (s *Session) inParallel() bool { return s.config().IsParallel() }

// scopes lists the states an intent is looked up in, in order: each active
// leaf and its ancestors inside its region (regions in configuration
// order, a nested parallel state's regions before the nested state, so the
// first region that handles an intent takes it), then the parallel state
// and its ancestors. For a plain leaf it is the leaf and its ancestors,
// innermost first.
func (s *Session) scopes() []*story.State {
	c := s.config()
	if !c.IsParallel() {
		return s.ancestors(c.State)
	}
	return append(s.regionScopes(nil, c), s.ancestors(c.State)...)
}

// regionScopes appends the scopes of parallel configuration c's regions.
func (s *Session) regionScopes(out []*story.State, c *story.Config) []*story.State {
	for _, r := range c.Regions {
		out = s.scopesBelow(out, r, c.State)
	}
	return out
}

// scopesBelow appends the scopes of region configuration r, from its
// innermost states up to (not including) the parallel state stop.
func (s *Session) scopesBelow(out []*story.State, r *story.Config, stop string) []*story.State {
	if r.IsParallel() {
		out = s.regionScopes(out, r)
	}
	for _, st := range s.ancestors(r.State) {
		if st.Name == stop {
			break
		}
		out = append(out, st)
	}
	return out
}

// sourceOf is where a transition found at state owner starts from inside
// a parallel configuration: the active leaf under owner in its region, or
// the nested parallel state when owner is that state or encloses it inside
// the region; "" when owner holds the whole configuration (or there is no
// parallel state).
func (s *Session) sourceOf(owner *story.State) string {
	c := s.config()
	if !c.IsParallel() || owner == nil || story.IsWithin(c.State, owner.Name) {
		return ""
	}
	return sourceIn(c, owner.Name)
}

func sourceIn(c *story.Config, owner string) string {
	i := c.RegionOf(owner)
	if i < 0 {
		return ""
	}
	r := c.Regions[i]
	if !r.IsParallel() || story.IsWithin(r.State, owner) {
		return r.State
	}
	return sourceIn(r, owner)
}

// transition moves the configuration to target (see moveIn), then
// delivers the events the turn has queued (emit:, and the done events of
// parallel states the move completed), unless it runs inside that
// delivery.
func (s *Session) transition(t *turnCtx, target string) error {
	err := s.move(t, target)
	s.pruneTimers()
	if err != nil || t.delivering || len(t.events) == 0 {
		return err
	}
	return s.broadcast(t)
}

func (s *Session) move(t *turnCtx, target string) error {
	before := s.config()
	c, err := s.moveIn(t, before, target)
	if err != nil {
		return err
	}
	s.setConfig(c)
	s.queueDone(t, before, c)
	return nil
}

// moveIn moves configuration c to target and returns the new one. A target
// inside one of a parallel state's regions moves that region alone (and,
// in a nested parallel state, that state's region alone), leaving the
// other regions as they are. Any other target exits every region (their
// states innermost first, regions in reverse configuration order), then
// the states up to the common ancestor, and enters the target.
func (s *Session) moveIn(t *turnCtx, c *story.Config, target string) (*story.Config, error) {
	if i := c.RegionOf(target); i >= 0 {
		r, err := s.moveIn(t, c.Regions[i], target)
		if err != nil {
			return nil, err
		}
		return c.With(i, r), nil
	}
	if err := s.exitRegions(t, c); err != nil {
		return nil, err
	}
	return s.enterPath(t, c.State, target)
}

// exitRegions exits everything below parallel configuration c's state:
// its regions in reverse configuration order, each from its innermost
// state up. A leaf has nothing below it.
func (s *Session) exitRegions(t *turnCtx, c *story.Config) error {
	for i := len(c.Regions) - 1; i >= 0; i-- {
		r := c.Regions[i]
		if err := s.exitRegions(t, r); err != nil {
			return err
		}
		for _, st := range s.ancestors(r.State) {
			if st.Name == c.State {
				break
			}
			s.state = st.Name
			if err := s.emit(t, trace.MachineStateExited{State: st.Name}); err != nil {
				return err
			}
		}
	}
	s.state = c.State
	return nil
}

// enterChain enters the states of chain (outermost first) and descends
// from the last. A parallel state on the way also enters its other
// regions at their initial states, in declaration order, so a target deep
// inside one region still activates every region.
func (s *Session) enterChain(t *turnCtx, chain []string, runOnEnter bool) (*story.Config, error) {
	if err := s.enterOne(t, chain[0], runOnEnter); err != nil {
		return nil, err
	}
	if len(chain) == 1 {
		return s.descend(t, chain[0], runOnEnter)
	}
	st := s.story.States[chain[0]]
	if st == nil || !st.IsParallel() {
		return s.enterChain(t, chain[1:], runOnEnter)
	}
	rs := make([]*story.Config, 0, len(st.Children))
	for _, r := range st.Children {
		var rc *story.Config
		var err error
		if r == chain[1] {
			rc, err = s.enterChain(t, chain[1:], runOnEnter)
		} else {
			rc, err = s.enterChain(t, []string{r}, runOnEnter)
		}
		if err != nil {
			return nil, err
		}
		rs = append(rs, rc)
	}
	return story.Parallel(st.Name, rs), nil
}

// descend enters a compound state's initial child, and every region of a
// parallel state, down to the leaves; runOnEnter is false when a flow
// seeds the session there. It returns the configuration below path.
func (s *Session) descend(t *turnCtx, path string, runOnEnter bool) (*story.Config, error) {
	st := s.story.States[path]
	switch {
	case st == nil:
		// A configuration given as the root (initial_state) is taken as it is.
		if c, err := story.ParseConfig(path); err == nil {
			return c, nil
		}
		return story.Leaf(path), nil
	case st.IsCompound():
		child, err := s.initialChild(t, st)
		if err != nil {
			return nil, err
		}
		return s.enterChain(t, []string{child}, runOnEnter)
	case st.IsParallel():
		rs := make([]*story.Config, 0, len(st.Children))
		for _, r := range st.Children {
			rc, err := s.enterChain(t, []string{r}, runOnEnter)
			if err != nil {
				return nil, err
			}
			rs = append(rs, rc)
		}
		return story.Parallel(path, rs), nil
	}
	return story.Leaf(path), nil
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
// or a parallel configuration naming one state in every region (a nested
// parallel state's configuration in parentheses).
func checkConfig(st *story.Story, path string) error {
	_, err := story.CheckConfig(st, path)
	return err
}
