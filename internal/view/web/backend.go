package web

import (
	"context"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// Sessions is the session API as the web server drives it: create a
// durable session of a story, pick one up from its journal, look at a
// finished one, fork and list. The server holds each session it opens
// (its writer lock) until it closes it.
type Sessions interface {
	// Create starts a new session of the story whose root file is
	// r.Story, under the id r.ID: turn 0 runs before it returns.
	Create(ctx context.Context, r CreateRequest, h Hooks) (Session, error)
	// Open picks up the unfinished session id names where its journal
	// stopped (a turn a crash left unfinished is taken again).
	Open(ctx context.Context, id string, h Hooks) (Session, error)
	// Inspect reports where a session stands without holding it: its
	// journal's last finished turn (a finished session is only looked
	// at).
	Inspect(ctx context.Context, id string) (session.Meta, *Status, error)
	// Fork starts a new session from turn at of the one id names.
	Fork(id string, at int64) (session.Meta, error)
	// List lists the sessions, the most recent activity first.
	List() ([]session.Meta, error)
	// Get is the index entry of session id (session.ErrNotFound when
	// there is none).
	Get(id string) (session.Meta, error)
}

// CreateRequest asks for a new session.
type CreateRequest struct {
	Story string // the story's root file (absolute)
	ID    string // the new session's id
}

// Hooks are what a session tells the server while a turn runs.
type Hooks struct {
	// OnCall is told of each call the session dispatches; the function
	// it returns is called when the call returned. Nil: not told.
	OnCall func(Call) (done func())
}

// Call is a call in flight, as the page shows it.
type Call struct {
	Handler string `json:"handler"`         // the invoke (host.agent.decide, host.run…)
	Agent   string `json:"agent,omitempty"` // the agent alias of an agent call
	Purpose string `json:"purpose,omitempty"`
}

// Session is a session this process holds. Its methods are called from
// one goroutine at a time.
type Session interface {
	ID() string
	Story() *story.Story
	// Meta is the session's index entry (its journal's path in Trace).
	Meta() session.Meta
	// Take takes one input. An input that does not parse is an
	// *InputError and takes no turn; any other error means the turn
	// could not run.
	Take(ctx context.Context, in Input) error
	// Status is where the session stands now.
	Status() (*Status, error)
	// OverrideWorld sets world keys at the start of the next turn (traced
	// as world.update, as a flow's world_override: is).
	OverrideWorld(kv map[string]any) error
	// Close saves the session and releases it.
	Close() error
}

// Kind says how an Input is read.
type Kind int

const (
	// KindRaw is a line as `kitsoki run` reads one: a typed intent when it
	// reads as one ("greet name=Ada"), else free text routed to an intent.
	KindRaw Kind = iota
	// KindIntent is an intent with its slots, typed.
	KindIntent
)

// Input is one input of a turn.
type Input struct {
	Kind   Kind
	Intent string         // KindIntent
	Slots  map[string]any // KindIntent
	Text   string         // KindRaw
}

// InputError is an input line that does not parse: no turn was taken.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Status is where a session stands: its state, what the state accepts,
// the world and the view.
type Status struct {
	ID          string
	State       string
	Description string
	Turn        int64
	// Intents are the allowed intents, sorted, with their declarations;
	// hidden ones are marked.
	Intents []IntentInfo
	World   map[string]any
	// ViewDoc is the typed view; ViewErr its rendering error.
	ViewDoc []orchestrator.ViewElement
	ViewErr error
	Done    bool
	Exit    string
}

// IntentInfo is an allowed intent with its slots in declaration order.
type IntentInfo struct {
	Name        string     `json:"name"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Hidden      bool       `json:"hidden,omitempty"`
	Slots       []SlotInfo `json:"slots"`
}

// SlotInfo is one slot of an intent.
type SlotInfo struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Required    bool     `json:"required,omitempty"`
	Values      []string `json:"values,omitempty"` // an enum's values, sorted
	Default     string   `json:"default,omitempty"`
	Description string   `json:"description,omitempty"`
}

// statusOf is where an orchestrator session stands.
func statusOf(s *orchestrator.Session) *Status {
	st := &Status{ID: s.ID(), State: s.State(), Turn: s.TurnNumber(),
		World: orchestrator.DeepCopy(s.World()).(map[string]any), Intents: intents(s.AllowedIntents(), s.IntentDef)}
	if d := s.Story().States[s.State()]; d != nil {
		st.Description = d.Description
	}
	st.Done, st.Exit = s.Done()
	st.ViewDoc, st.ViewErr = s.ViewDoc()
	return st
}

// intents describes the allowed intents with def, the session's lookup of
// a declaration.
func intents(allowed []string, def func(string) *story.Intent) []IntentInfo {
	out := make([]IntentInfo, 0, len(allowed))
	for _, name := range allowed {
		in := IntentInfo{Name: name, Slots: []SlotInfo{}}
		if d := def(name); d != nil {
			in.Title, in.Description, in.Hidden = d.Title, d.Description, d.Hidden
			for _, sn := range d.SlotOrder {
				sl := d.Slots[sn]
				si := SlotInfo{Name: sn, Type: sl.Type, Required: sl.Required, Description: sl.Description}
				if si.Type == "" {
					si.Type = "string"
				}
				if sl.HasDefault && sl.Default != nil {
					si.Default = fmt.Sprint(sl.Default)
				}
				for _, v := range sl.Values { // in the story's order
					si.Values = append(si.Values, fmt.Sprint(v))
				}
				in.Slots = append(in.Slots, si)
			}
		}
		out = append(out, in)
	}
	return out
}
