package orchestrator

import (
	"slices"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Room is the top-level state the session is in: the room whose footer:,
// theme: and transcript: the surfaces use (nil before the story starts).
func (s *Session) Room() *story.State {
	st := s.focus()
	for st != nil && st.Parent != "" {
		st = s.story.States[st.Parent]
	}
	return st
}

// Footer renders the room's footer: ("" when it has none): the status line
// a surface shows under its prompt, with the view's environment.
func (s *Session) Footer() (string, error) {
	r := s.Room()
	if r == nil || r.Footer == nil {
		return "", nil
	}
	return r.Footer.Render(s.stateEnv(&turnCtx{n: s.turn}))
}

// menuOf is the menu: that governs the current state: the innermost scope
// that declares one (nil when none does).
func (s *Session) menuOf() []string {
	for _, st := range s.scopes() {
		if len(st.Menu) > 0 {
			return st.Menu
		}
	}
	return nil
}

// MenuIntents is the intents the room offers, in the order its menu shows
// them: the governing menu:'s entries the state takes, or every allowed
// intent, higher priority: first, then by name, when no menu: is declared. The state still takes the
// intents a menu: leaves out.
func (s *Session) MenuIntents() []string {
	allowed := s.AllowedIntents()
	m := s.menuOf()
	if m == nil {
		prio := func(name string) int {
			if def := s.intentDef(name); def != nil {
				return def.Priority
			}
			return 0
		}
		slices.SortStableFunc(allowed, func(a, b string) int { return prio(b) - prio(a) })
		return allowed
	}
	out := make([]string, 0, len(m))
	for _, name := range m {
		if slices.Contains(allowed, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// orderByMenu puts the menu entries in the governing menu:'s order and
// marks the intents it leaves out hidden (takeable, not listed).
func (s *Session) orderByMenu(entries []expr.MenuEntry) []expr.MenuEntry {
	m := s.menuOf()
	if m == nil {
		return entries
	}
	out := make([]expr.MenuEntry, 0, len(entries))
	for _, name := range m {
		for _, e := range entries {
			if e.Intent == name {
				out = append(out, e)
				break
			}
		}
	}
	for _, e := range entries {
		if !slices.Contains(m, e.Intent) {
			e.Hidden = true
			out = append(out, e)
		}
	}
	return out
}
