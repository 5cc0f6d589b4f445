package orchestrator

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Handover is what a session holds between turns beyond its state, world,
// turn and armed timeouts: the room history Back pops and the overlays.
// A driver that hands a session over to a new Session of the same story
// (the Temporal workflow's continue-as-new) takes it with Handover and
// gives it back with RestoreHandover after Restore, so the new session
// goes on exactly as the old one would have.
type Handover struct {
	// History is the room-history stack, oldest first (History).
	History []string `json:"history,omitempty"`
	// Overlay is the open off_path or meta mode; nil on the path.
	Overlay *OverlayState `json:"overlay,omitempty"`
	// Kept are the closed persistent meta modes and their conversations,
	// by name.
	Kept []OverlayState `json:"kept,omitempty"`
}

// OverlayState is an overlay's conversation: which overlay (Name is
// "off_path" with Meta false, else a meta mode's name) and its turns.
type OverlayState struct {
	Name       string   `json:"name"`
	Meta       bool     `json:"meta,omitempty"`
	Transcript []string `json:"transcript,omitempty"`
}

// Handover returns the session's history and overlays, copied.
func (s *Session) Handover() Handover {
	h := Handover{History: slices.Clone(s.history)}
	if s.over != nil {
		o := s.overlayState(s.over)
		h.Overlay = &o
	}
	for _, name := range slices.Sorted(maps.Keys(s.kept)) {
		h.Kept = append(h.Kept, s.overlayState(s.kept[name]))
	}
	return h
}

func (s *Session) overlayState(o *overlay) OverlayState {
	return OverlayState{Name: o.def.Name, Meta: o.def.Meta, Transcript: slices.Clone(o.transcript)}
}

// RestoreHandover puts back what Handover took, after Restore. Every
// overlay must be one the story declares, and a kept one a persistent
// meta mode.
func (s *Session) RestoreHandover(h Handover) error {
	for _, room := range h.History {
		if !s.knownState(room) {
			return fmt.Errorf("the carried room history names state %q, which is not in the story (states: %s)", room, joinSorted(s.story.States))
		}
	}
	var over *overlay
	if h.Overlay != nil {
		def, err := s.overlayDef(*h.Overlay)
		if err != nil {
			return err
		}
		over = &overlay{def: def, transcript: slices.Clone(h.Overlay.Transcript)}
	}
	var kept map[string]*overlay
	for _, k := range h.Kept {
		def, err := s.overlayDef(k)
		if err != nil {
			return err
		}
		if !k.Meta || !def.Persist {
			return fmt.Errorf("the carried overlay %q is kept closed, but only a persistent meta mode (persist: true) keeps its conversation", k.Name)
		}
		if kept == nil {
			kept = map[string]*overlay{}
		}
		kept[k.Name] = &overlay{def: def, transcript: slices.Clone(k.Transcript)}
	}
	// An open persistent mode is the same conversation as its kept one.
	if over != nil && kept[over.def.Name] != nil && over.def.Persist {
		kept[over.def.Name] = over
	}
	s.history, s.over, s.kept = slices.Clone(h.History), over, kept
	return nil
}

// overlayDef is the story's overlay o names.
func (s *Session) overlayDef(o OverlayState) (*story.Overlay, error) {
	if !o.Meta {
		if s.story.OffPath == nil {
			//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
			return nil, fmt.Errorf("the carried overlay is off_path, but the story declares no off_path:")
		}
		return s.story.OffPath, nil
	}
	def, ok := s.story.MetaModes[o.Name]
	if !ok {
		return nil, fmt.Errorf("the carried meta mode %q is not in the story's meta_modes: (declared: %s)", o.Name, joinSorted(s.story.MetaModes))
	}
	return def, nil
}
