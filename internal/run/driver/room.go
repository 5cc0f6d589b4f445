package driver

import (
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Room is what a front end shows of the room a session is in (its
// top-level state) beside the state's own view.
type Room struct {
	// Name is the room's state name ("" outside any room).
	Name string
	// Theme is the room's theme: ("" for the default).
	Theme string
	// Transcript is how a surface treats what was printed before the room
	// is entered: TranscriptTransient starts the room on a clear screen.
	Transcript string
	// Footer is the room's footer:, rendered; FooterErr its render error.
	Footer    string
	FooterErr error
	// Relevant are the state's relevant_world: values ("key=value") and
	// relevant_slots: names ("<slot>").
	Relevant []string
	// Menu names the visible intents in the order of the menu: that
	// governs the state (else by priority:).
	Menu []string
}

// Transcript modes of a room (Room.Transcript).
const (
	TranscriptPersistent = "persistent"
	TranscriptTransient  = "transient"
)

// RoomOf is the room s is in and the location indicator of its state.
func RoomOf(s *orchestrator.Session) Room {
	var r Room
	if st := s.Story().States[s.State()]; st != nil {
		r.Relevant = Relevant(st, s.World())
	}
	if room := s.Room(); room != nil {
		r.Name, r.Theme, r.Transcript = room.Name, room.Theme, room.Transcript
		if r.Transcript == "" {
			// As in Kitsoki: a conversational room starts clear, others
			// keep what came before.
			r.Transcript = TranscriptPersistent
			if room.Mode == story.ModeConversational {
				r.Transcript = TranscriptTransient
			}
		}
		r.Footer, r.FooterErr = s.Footer()
	}
	r.Menu = s.MenuIntents()
	return r
}

// Relevant is the location indicator of state s: its relevant_world:
// keys with their values (JSON but for strings), then its relevant_slots:
// names.
func Relevant(s *story.State, world map[string]any) []string {
	out := make([]string, 0, len(s.RelevantWorld)+len(s.RelevantSlots))
	for _, k := range s.RelevantWorld {
		v := fmt.Sprint(world[k])
		if b, err := json.Marshal(world[k]); err == nil && world[k] != nil {
			if _, isStr := world[k].(string); !isStr {
				v = string(b)
			}
		}
		out = append(out, k+"="+v)
	}
	for _, sl := range s.RelevantSlots {
		out = append(out, "<"+sl+">")
	}
	return out
}

// MenuHint is what a menu shows after an intent's name: its title:, its
// description:, or both as "title: description".
func MenuHint(title, description string) string {
	switch {
	case title == "":
		return description
	case description == "":
		return title
	}
	return title + ": " + description
}
