package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// overlay is an open off_path or meta mode conversation.
type overlay struct {
	def *story.Overlay
	// transcript holds the conversation's turns ("user: …", "agent: …"),
	// kept across reopenings of a persistent meta mode.
	transcript []string
}

// Overlay names the open overlay ("off_path" or a meta mode's name), or ""
// when the story is on its path.
func (s *Session) Overlay() string {
	if s.over == nil {
		return ""
	}
	return s.over.def.Name
}

// overlayFor is the overlay a typed line opens, if any: the off_path
// trigger, "/<meta trigger>" (the first mode by name with that trigger) or
// "/<meta trigger> <name>".
func (s *Session) overlayFor(line string) *story.Overlay {
	line = strings.TrimSpace(line)
	if op := s.story.OffPath; op != nil && line == op.Trigger {
		return op
	}
	if s.story.MetaModes == nil {
		return nil
	}
	if m := s.groupedOverlay(strings.Fields(line)); m != nil {
		return m
	}
	cmd, name, _ := strings.Cut(line, " ")
	name = strings.TrimSpace(name)
	for _, n := range slices.Sorted(maps.Keys(s.story.MetaModes)) {
		m := s.story.MetaModes[n]
		if m.Group == "" && m.Trigger == cmd && (name == "" || name == n) {
			return m
		}
	}
	return nil
}

// groupedOverlay is the grouped meta mode "/meta <group> [<verb>]" opens:
// the group's verb, or its default verb; a bare "/meta <verb>" is the
// story group's verb, as in Kitsoki.
func (s *Session) groupedOverlay(words []string) *story.Overlay {
	if len(words) < 2 || len(words) > 3 || words[0] != "/meta" {
		return nil
	}
	group, verb := words[1], ""
	if len(words) == 3 {
		verb = words[2]
	}
	find := func(group, verb string) *story.Overlay {
		for _, n := range slices.Sorted(maps.Keys(s.story.MetaModes)) {
			m := s.story.MetaModes[n]
			if m.Group != group {
				continue
			}
			if (verb == "" && m.Default) || (verb != "" && strings.TrimPrefix(m.Trigger, "/") == verb) {
				return m
			}
		}
		return nil
	}
	if m := find(group, verb); m != nil {
		return m
	}
	if verb == "" {
		return find("story", group)
	}
	return nil
}

// sayOverlay handles a free-text line as an overlay turn when an overlay
// is open or the line opens one; handled is false otherwise.
func (s *Session) sayOverlay(ctx context.Context, t *turnCtx, text string) (out *Outcome, handled bool, err error) {
	line := strings.TrimSpace(text)
	if s.over == nil {
		def := s.overlayFor(line)
		if def == nil {
			return nil, false, nil
		}
		o := &overlay{def: def}
		if prev, ok := s.kept[def.Name]; ok && def.Persist {
			o = prev
		}
		s.over = o
		banner := def.Banner
		if banner == "" {
			name := def.Name
			if def.Label != "" {
				name += ": " + def.Label // a meta mode's label: names it for people
			}
			banner = "*** " + name + " — type " + def.Exit + " to return ***"
		}
		out, err := s.stayWith(t, banner)
		if out != nil {
			out.View = "" // the story is paused: the conversation shows, not the view
		}
		return out, true, err
	}
	o := s.over
	if line == o.def.Exit {
		s.over = nil
		if o.def.Persist {
			if s.kept == nil {
				s.kept = map[string]*overlay{}
			}
			s.kept[o.def.Name] = o
		}
		if o.def.Return != "" && o.def.Return != s.state {
			out, err := s.runTurn(ctx, t, func() error { return s.transition(t, o.def.Return) })
			if err != nil {
				return nil, true, err
			}
			if o.def.Message != "" {
				out.Says = append([]string{o.def.Message}, out.Says...)
			}
			return out, true, s.sink.EndTurn()
		}
		out, err := s.stayWith(t, o.def.Message)
		return out, true, err
	}
	out, err = s.overlayMessage(ctx, t, o, line)
	return out, true, err
}

// overlayMessage sends one message of an open overlay to its agent.
func (s *Session) overlayMessage(ctx context.Context, t *turnCtx, o *overlay, line string) (*Outcome, error) {
	args := map[string]any{"prompt": s.overlayPrompt(o, line)}
	if o.def.Agent != "" {
		args["agent"] = o.def.Agent
	}
	answer, callErr, err := s.converse(ctx, t, o.def.Invoke, args)
	if err != nil {
		return nil, err
	}
	if callErr != nil {
		out, err := s.reject(t, &Rejection{Code: CodeOverlayFailed,
			Message: fmt.Sprintf("the %s agent could not answer: %v (type %s to return to the story)", o.def.Name, callErr, o.def.Exit)})
		if out != nil {
			out.HostErrors = append(out.HostErrors, callErr)
		}
		return out, err
	}
	o.transcript = append(o.transcript, "user: "+line, "agent: "+answer)
	out, err := s.stayWith(t, answer)
	if out != nil {
		out.View = ""
	}
	return out, err
}

// openLane sends free text a contextual lane took to the lane's meta mode
// agent, its conversation kept across the room's turns (as the mode's
// own is); state and world stay as they were, and the next line is routed
// in the room again.
func (s *Session) openLane(ctx context.Context, t *turnCtx, r Route, text string) (*Outcome, error) {
	def := s.story.MetaModes[r.Lane]
	if def == nil {
		return nil, fmt.Errorf("contextual lane %q names no meta mode", r.Lane)
	}
	o := &overlay{def: def}
	if prev, ok := s.kept[def.Name]; ok {
		o = prev
	}
	if s.kept == nil {
		s.kept = map[string]*overlay{}
	}
	s.kept[def.Name] = o
	out, err := s.overlayMessage(ctx, t, o, strings.TrimSpace(text))
	if out != nil {
		out.Route = &r
	}
	return out, err
}

// overlayPrompt is what an overlay's agent is sent: where the player is
// (state, view, world), the conversation so far, and the new message.
func (s *Session) overlayPrompt(o *overlay, line string) string {
	var b strings.Builder
	b.WriteString("[context]\nstate: " + s.state + "\n")
	if view, err := s.View(); err == nil && view != "" {
		b.WriteString("view: |\n  " + strings.ReplaceAll(strings.TrimRight(stripANSI(view), "\n"), "\n", "\n  ") + "\n")
	}
	if len(s.world) > 0 {
		b.WriteString("world:\n")
		for _, k := range slices.Sorted(maps.Keys(s.world)) {
			v := showValue(s.world[k])
			if r := []rune(v); len(r) > 200 {
				v = string(r[:200]) + "…"
			}
			b.WriteString("  " + k + ": " + v + "\n")
		}
	}
	b.WriteString("[/context]\n\n")
	if len(o.transcript) > 0 {
		b.WriteString("[conversation]\n" + strings.Join(o.transcript, "\n") + "\n[/conversation]\n\n")
	}
	b.WriteString("[user]\n" + line + "\n[/user]\n")
	return b.String()
}
