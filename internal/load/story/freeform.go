package story

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The free-form fallback (routing.free_form_fallback) names a story's
// work-intake room: a state and an intent with one required string slot.
// Every other state of the story (imported ones included) that has no
// free-text sink of its own takes that intent too: the intake state's arms
// are copied onto it, with "stay" arms re-pointed at the intake state, and
// free text no earlier tier claims goes to it as to a default_intent. So a
// request typed (or an intent sent) from a strict menu room reaches the
// workbench instead of a near-miss command. Without the key, a state named
// landing with on: arms for an intent named work is the fallback (Kitsoki's
// convention). An imported story's fallback applies to its own states, in
// its renamed names; the innermost one wins.

// Auto-detected fallback: the state and intent Kitsoki's loader looks for
// when routing.free_form_fallback is absent.
const (
	FallbackState  = "landing"
	FallbackIntent = "work"
)

var fallbackKeys = &keySpec{v1: []string{"state", "intent"}}

// readFallback reads a free_form_fallback mapping: both keys, non-empty
// strings.
func (l *loader) readFallback(f *file, n *yaml.Node) *FreeFormFallback {
	const path = "routing.free_form_fallback"
	fs, ok := l.fields(f, n, path, fallbackKeys)
	if !ok {
		return nil
	}
	fb := &FreeFormFallback{Pos: l.pos(f, n)}
	strField(l, f, fs, path, "state", &fb.State)
	strField(l, f, fs, path, "intent", &fb.Intent)
	for _, k := range []string{"state", "intent"} {
		e, ok := fs.get(k)
		v := fb.State
		if k == "intent" {
			v = fb.Intent
		}
		if ok && strings.TrimSpace(v) == "" {
			l.errAt(f, e.val, joinPath(path, k), "%s is empty; name the work-intake %s (e.g. %s: %s)", k, k, k, map[string]string{"state": FallbackState, "intent": FallbackIntent}[k])
			return nil
		}
		if !ok {
			l.errAt(f, n, path, "%s: is required (the work-intake state and the intent, with one required string slot, that unclaimed free text goes to)", k)
			return nil
		}
	}
	fb.State = normStateName(fb.State)
	return fb
}

// loadFallback reads the story's own routing.free_form_fallback.
func (l *loader) loadFallback(f *file, n *yaml.Node) {
	l.st.Routing.FreeFormFallback = l.readFallback(f, n)
}

// unitFallback reads an imported story's routing.free_form_fallback (the
// rest of its routing: block is the importer's).
func (l *loader) unitFallback(f *file, n *yaml.Node) *FreeFormFallback {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "free_form_fallback" {
			return l.readFallback(f, n.Content[i+1])
		}
	}
	return nil
}

// fallbackScope is one story's fallback: the states under prefix ("" for
// the root story) take intent with intake's arms.
type fallbackScope struct {
	prefix string
	intake *State // the state whose arms are copied
	to     string // the state a "stay" arm of the copy enters
	intent string
	slot   string
}

// applyFallbacks copies each story's fallback onto its states. It runs
// after every other check, so the copies are checked as their originals
// and do not make rooms decision gates.
func (l *loader) applyFallbacks() {
	var scopes []fallbackScope
	if sc, ok := l.fallbackScope("", l.st.Routing.FreeFormFallback, nil); ok {
		scopes = append(scopes, sc)
	}
	for name, st := range l.st.States {
		if st.Import == nil {
			continue
		}
		if sc, ok := l.fallbackScope(name, st.Import.Fallback, st.Import.Intents); ok {
			scopes = append(scopes, sc)
		}
	}
	if len(scopes) == 0 {
		return
	}
	// The innermost scope is the one with the longest prefix (scopes are
	// disjoint or nested, so the order among equal lengths is free).
	slices.SortFunc(scopes, func(a, b fallbackScope) int {
		if d := len(b.prefix) - len(a.prefix); d != 0 {
			return d
		}
		return strings.Compare(a.prefix, b.prefix)
	})
	type copyTo struct {
		st *State
		sc *fallbackScope
	}
	var todo []copyTo
	for _, name := range slices.Sorted(maps.Keys(l.st.States)) {
		st := l.st.States[name]
		for i := range scopes {
			sc := &scopes[i]
			if sc.prefix != "" && name != sc.prefix && !strings.HasPrefix(name, sc.prefix+".") {
				continue
			}
			if l.takesFallback(st, sc) {
				todo = append(todo, copyTo{st, sc})
			}
			break
		}
	}
	// Decided on the states as loaded, then applied, so one copy does not
	// decide another.
	for _, c := range todo {
		arms := make([]*Arm, 0, len(c.sc.intake.On[c.sc.intent]))
		for _, a := range c.sc.intake.On[c.sc.intent] {
			cp := *a
			if cp.Stay {
				cp.Target, cp.Stay = c.sc.to, false
			}
			arms = append(arms, &cp)
		}
		if c.st.On == nil {
			c.st.On = map[string][]*Arm{}
		}
		c.st.On[c.sc.intent] = arms
		c.st.DefaultIntent, c.st.DefaultSlot, c.st.Fallback = c.sc.intent, c.sc.slot, c.sc.to
	}
}

// takesFallback: st is a state the session can rest in (or a parallel
// state), not inside a parallel state, other than the intake, with no
// free-text sink (default_intent, agent_off_ramp) and no
// arms for the intent, its own or an enclosing state's.
func (l *loader) takesFallback(st *State, sc *fallbackScope) bool {
	if st.Name == sc.to || st.Terminal || st.Import != nil || strings.HasPrefix(st.Name, ExitStatePrefix) {
		return false
	}
	if l.hasOwnArms(st, sc.intent) || st.InheritedDefaultIntent(l.st) != nil {
		return false
	}
	for cur := st; cur != nil; cur = l.st.States[cur.Parent] {
		// Inside a parallel state the parallel state takes the copy: its
		// regions find it there, and free text goes to the parallel
		// state's sink.
		if cur.OffRamp != nil || (cur != st && cur.Kind == KindParallel) {
			return false
		}
		if cur.Parent == "" {
			break
		}
	}
	return true
}

// fallbackScope resolves one story's fallback: the declared one (checked,
// errors at its position) or, when there is none, the landing/work
// convention when that story has it. intents renames an imported story's
// intent names (nil for the root story).
func (l *loader) fallbackScope(prefix string, fb *FreeFormFallback, intents map[string]string) (fallbackScope, bool) {
	qualify := func(s string) string {
		if prefix == "" {
			return s
		}
		return prefix + "." + s
	}
	if fb == nil {
		intent := FallbackIntent
		if n, ok := intents[intent]; ok {
			intent = n
		}
		st := l.st.States[qualify(FallbackState)]
		if st == nil || st.Terminal || st.Import != nil || len(st.On[intent]) == 0 {
			return fallbackScope{}, false
		}
		def := l.intentFor(st, intent)
		if def == nil {
			return fallbackScope{}, false
		}
		slot, err := DefaultSlot(def)
		if err != nil {
			l.warns = append(l.warns, Diagnostic{Pos: st.Pos, Path: "states." + st.Name,
				Message: "state " + st.Name + " has on." + intent + " but is not used as the free-form fallback: intent " + intent + " " + err.Error() + " (or set routing.free_form_fallback)"})
			return fallbackScope{}, false
		}
		return fallbackScope{prefix: prefix, intake: st, to: st.Name, intent: intent, slot: slot}, true
	}
	const path = "routing.free_form_fallback"
	st := l.st.States[fb.State]
	if st == nil {
		var names []string
		for _, n := range slices.Sorted(maps.Keys(l.st.States)) {
			if !strings.HasPrefix(n, ExitStatePrefix) && (prefix == "" || strings.HasPrefix(n, prefix+".")) {
				names = append(names, n)
			}
		}
		l.diags = append(l.diags, Diagnostic{Pos: fb.Pos, Path: path + ".state",
			Message: "free_form_fallback state " + strconv.Quote(fb.State) + " is not a state of the story" + didYouMean(fb.State, names)})
		return fallbackScope{}, false
	}
	if st.Terminal || st.Import != nil {
		l.diags = append(l.diags, Diagnostic{Pos: fb.Pos, Path: path + ".state",
			Message: "free_form_fallback state " + strconv.Quote(fb.State) + " is terminal or an import; name the room that takes work requests"})
		return fallbackScope{}, false
	}
	if !l.hasOwnArms(st, fb.Intent) {
		l.diags = append(l.diags, Diagnostic{Pos: fb.Pos, Path: path + ".intent",
			Message: "free_form_fallback intent " + strconv.Quote(fb.Intent) + " has no on: arms in state " + strconv.Quote(fb.State) + "; add on." + fb.Intent + " there, or name an intent it handles" + didYouMean(fb.Intent, slices.Sorted(maps.Keys(st.On)))})
		return fallbackScope{}, false
	}
	def := l.intentFor(st, fb.Intent)
	if def == nil {
		l.diags = append(l.diags, Diagnostic{Pos: fb.Pos, Path: path + ".intent",
			Message: "free_form_fallback intent " + strconv.Quote(fb.Intent) + " is not declared in intents:; declare it with one required string slot for the utterance"})
		return fallbackScope{}, false
	}
	slot, err := DefaultSlot(def)
	if err != nil {
		l.diags = append(l.diags, Diagnostic{Pos: fb.Pos, Path: path + ".intent",
			Message: "free_form_fallback intent " + strconv.Quote(fb.Intent) + ": " + err.Error()})
		return fallbackScope{}, false
	}
	// The arms are the ones the intake state sees: its own, else an
	// enclosing state's.
	intake := st
	for len(intake.On[fb.Intent]) == 0 && intake.Parent != "" {
		intake = l.st.States[intake.Parent]
	}
	return fallbackScope{prefix: prefix, intake: intake, to: st.Name, intent: fb.Intent, slot: slot}, true
}
