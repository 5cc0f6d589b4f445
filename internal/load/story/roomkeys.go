package story

import (
	"slices"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"go.yaml.in/yaml/v3"
)

// The room keys a surface reads: menu: (which of the room's intents its
// menu lists, in which order), transcript: (how the terminal UI treats what
// was printed before the room), footer: (the room's status line under the
// prompt) and theme: (the room's colours in the terminal UI).

// Transcript modes (transcript:).
const (
	TranscriptPersistent = "persistent"
	TranscriptTransient  = "transient"
)

// Themes are the room themes the terminal UI draws (theme:). An unknown
// name draws as "default", as in Kitsoki; the loader warns about it.
var Themes = []string{"default", "meta-blue", "meta-amber", "off-path"}

// loadRoomKeys reads menu:, transcript:, footer: and theme: of a state.
func (l *loader) loadRoomKeys(f *file, fs fieldSet, path string, s *State) {
	if m, ok := fs.get("menu"); ok {
		p := joinPath(path, "menu")
		items, _ := l.list(f, m.val, p)
		for i, it := range items {
			ip := indexPath(p, i)
			if name, ok := l.str(f, it, ip); ok && name != "" {
				s.Menu = append(s.Menu, name)
				l.menuRefs = append(l.menuRefs, &nodeRef{f: f, n: it, path: ip, value: name, state: s})
			}
		}
	}
	if t, ok := fs.get("transcript"); ok {
		p := joinPath(path, "transcript")
		if v, ok := l.str(f, t.val, p); ok && v != "" {
			switch {
			case s.Parent != "":
				l.errAt(f, t.key, p, "transcript: is a room's (a top-level state's); state %q is nested in %q", s.Name, s.Parent)
			case v != TranscriptPersistent && v != TranscriptTransient:
				l.errAt(f, t.val, p, "unknown transcript %q: use persistent (prior output stays in view) or transient (the room starts on a clear screen)%s",
					v, didYouMean(v, []string{TranscriptPersistent, TranscriptTransient}))
			default:
				s.Transcript = v
			}
		}
	}
	if t, ok := fs.get("theme"); ok {
		p := joinPath(path, "theme")
		if v, ok := l.str(f, t.val, p); ok && v != "" {
			switch {
			case s.Parent != "":
				l.errAt(f, t.key, p, "theme: is a room's (a top-level state's); state %q is nested in %q", s.Name, s.Parent)
			default:
				if !slices.Contains(Themes, v) {
					l.warnAt(f, t.val, p, "unknown theme %q draws as \"default\" (themes: default, meta-blue, meta-amber, off-path)%s", v, didYouMean(v, Themes))
				}
				s.Theme = v
			}
		}
	}
	if ft, ok := fs.get("footer"); ok {
		p := joinPath(path, "footer")
		if s.Parent != "" {
			l.warnAt(f, ft.key, p, "footer: of nested state %q is not shown: the status line is the room's, the footer of top-level state %q", s.Name, topRoom(s.Name))
		}
		l.compileText(f, ft.val, p, func(t *expr.Text) { s.Footer = t })
	}
}

// topRoom is the top-level state a state path is in.
func topRoom(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i]
		}
	}
	return name
}

// checkMenus reports a menu: entry that names no intent the room takes
// (one it or an enclosing state has on: arms for).
func (l *loader) checkMenus() {
	for _, r := range l.menuRefs {
		var takes []string
		found := false
		for st := r.state; st != nil && !found; st = l.st.States[st.Parent] {
			if len(st.On[r.value]) > 0 {
				found = true
			}
			for name := range st.On {
				if name != "*" {
					takes = append(takes, name)
				}
			}
			if st.Parent == "" {
				break
			}
		}
		if found {
			continue
		}
		slices.Sort(takes)
		l.errAt(r.f, r.n, r.path, "menu: names %q, which state %q has no on: arms for%s", r.value, r.state.Name, didYouMean(r.value, takes))
	}
}

// annotateRef is a media element's annotate_intent:, checked once every
// state is known: the room must take the intent, and the intent must have
// the feedback slot.
type annotateRef struct {
	f     *file
	n     *yaml.Node
	path  string
	media *ViewMedia
	state *State
}

func (l *loader) checkAnnotations() {
	for _, r := range l.annotateRefs {
		if r.state == nil {
			continue
		}
		name := r.media.AnnotateIntent
		taken := false
		var takes []string
		for st := r.state; st != nil; st = l.st.States[st.Parent] {
			if len(st.On[name]) > 0 {
				taken = true
			}
			for k := range st.On {
				takes = append(takes, k)
			}
			if st.Parent == "" {
				break
			}
		}
		if !taken {
			slices.Sort(takes)
			l.errAt(r.f, r.n, r.path, "annotate_intent: %q is not an intent state %q takes (it has no on: arms for it)%s", name, r.state.Name, didYouMean(name, takes))
			continue
		}
		def := l.intentIn(r.state, name)
		if def == nil {
			continue // an undeclared intent takes any slots
		}
		if _, ok := def.Slots[r.media.AnnotateSlot]; !ok {
			l.errAt(r.f, r.n, r.path, "annotate_intent: %q has no slot %q for the annotation's text (annotate_feedback_slot: names it; the default is feedback)%s",
				name, r.media.AnnotateSlot, didYouMean(r.media.AnnotateSlot, def.SlotOrder))
		}
	}
}

// intentIn is the definition of intent name as state s sees it: its own
// or an enclosing state's intents:, else the story's (nil when none).
func (l *loader) intentIn(s *State, name string) *Intent {
	for st := s; st != nil; st = l.st.States[st.Parent] {
		if in := st.Intents[name]; in != nil {
			return in
		}
		if st.Parent == "" {
			break
		}
	}
	return l.st.Intents[name]
}
