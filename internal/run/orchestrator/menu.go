package orchestrator

import (
	"cmp"
	"slices"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Menu computes the current state's menu: every intent the state (or an
// ancestor, or a parallel region) has arms for, in scope order and, within
// a state, in declaration order. An intent is primary when dispatching it
// now would choose an arm (the rule pickArm applies: a default arm, an arm
// without when:, or the first true when:), blocked otherwise, with the
// guard_hint of the first failing arm that has one. Guards see the world
// and no slots; a guard that fails to evaluate counts as false.
func (s *Session) Menu() []expr.MenuEntry {
	env := s.env(&turnCtx{n: s.turn, slots: map[string]any{}})
	seen := map[string]bool{}
	var out []expr.MenuEntry
	for _, st := range s.scopes() {
		names := make([]string, 0, len(st.On))
		for name, arms := range st.On {
			if name != "*" && !story.IsDoneEvent(name) && !seen[name] && len(arms) > 0 {
				names = append(names, name)
			}
		}
		slices.SortFunc(names, func(a, b string) int {
			pa, pb := st.On[a][0].Pos, st.On[b][0].Pos
			return cmp.Or(cmp.Compare(pa.File, pb.File), cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Col, pb.Col), cmp.Compare(a, b))
		})
		for _, name := range names {
			seen[name] = true
			out = append(out, s.menuEntry(st, name, env))
		}
	}
	s.byPriority(out)
	return s.orderByMenu(out)
}

// byPriority puts intents with a higher priority: first, keeping the
// order of those with the same one.
func (s *Session) byPriority(entries []expr.MenuEntry) {
	prio := func(name string) int {
		if def := s.intentDef(name); def != nil {
			return def.Priority
		}
		return 0
	}
	slices.SortStableFunc(entries, func(a, b expr.MenuEntry) int { return cmp.Compare(prio(b.Intent), prio(a.Intent)) })
}

func (s *Session) menuEntry(st *story.State, name string, env expr.Env) expr.MenuEntry {
	e := expr.MenuEntry{Intent: name, Display: name}
	if def := s.intentDef(name); def != nil {
		e.Hidden = def.Hidden
		if def.Title != "" {
			e.Display = def.Title
		}
	}
	for i, a := range st.On[name] {
		ok := a.Default || a.When == nil
		if !ok {
			var err error
			if ok, err = a.When.Eval(env); err != nil {
				s.logger.Debug("menu: guard error counts as false", "state", st.Name, "intent", name, "arm", i, "error", err)
			}
		}
		if ok {
			e.Primary, e.Reason = true, ""
			e.DestinationHint = s.destinationHint(a, env)
			return e
		}
		if e.Reason == "" {
			e.Reason = a.GuardHint
		}
	}
	return e
}

// destinationHint is the state an arm leads to: its target, the current
// state for ".", a templated target evaluated now ("" when it fails).
func (s *Session) destinationHint(a *story.Arm, env expr.Env) string {
	switch {
	case a.Stay:
		return s.state
	case a.TargetTemplate != nil:
		v, err := a.TargetTemplate.Eval(env)
		if str, ok := v.(string); ok && err == nil {
			return str
		}
		return ""
	}
	return a.Target
}
