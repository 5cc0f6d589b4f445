package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Turns groups a journal's events by turn, keeping each turn's last
// attempt (the events after its last kitsoki.resumed marker), in turn
// order. A turn whose last attempt holds only the marker is left out.
func Turns(evs []trace.Event) []TurnEvents {
	var out []TurnEvents
	for i := 0; i < len(evs); {
		n := evs[i].Turn
		var all []attempt
		all = append(all, attempt{})
		for ; i < len(evs) && evs[i].Turn == n; i++ {
			if evs[i].Kind == KindResumed {
				all = append(all, attempt{})
			}
			all[len(all)-1].evs = append(all[len(all)-1].evs, evs[i])
		}
		last := all[len(all)-1].evs
		if len(last) == 1 && last[0].Kind == KindResumed {
			continue
		}
		out = append(out, TurnEvents{Turn: n, Events: last, Calls: calls(all[len(all)-1:])})
	}
	return out
}

// TurnEvents is one turn's last attempt.
type TurnEvents struct {
	Turn   int64
	Events []trace.Event
	Calls  []Call
}

// Finished reports whether the attempt ran to the turn's end.
func (t TurnEvents) Finished() bool {
	for i := range t.Events {
		switch t.Events[i].Kind {
		case trace.KindTurnEnd, orchestrator.KindSnapshot:
			return true
		}
	}
	return false
}

// Input is the attempt's turn.input; ok is false for turn 0.
func (t TurnEvents) Input() (Input, bool) {
	for i := range t.Events {
		if t.Events[i].Kind == trace.KindTurnInput {
			var ti trace.TurnInput
			if trace.Decode(&t.Events[i], &ti) == nil {
				return Input{Text: ti.Input, Intent: ti.Intent}, true
			}
		}
	}
	return Input{}, false
}

// Decision is one choice a turn made: an arm taken, or a call queued.
type Decision struct {
	State string
	// Arm, Intent and Target are set for an arm (Namespace is empty).
	Arm    int
	Intent string
	Target string
	// Namespace and Call are set for a queued call.
	Namespace string
	Call      string
}

func (d *Decision) phrase(past bool) string {
	switch {
	case d == nil && past:
		return "did nothing more"
	case d == nil:
		return "does nothing more"
	case d.Namespace != "":
		what := d.Namespace
		if d.Call != "" {
			what += " (call " + d.Call + ")"
		}
		if past {
			return "queued " + what
		}
		return "queues " + what
	case past:
		return fmt.Sprintf("took arm %d → %s", d.Arm, d.Target)
	}
	return fmt.Sprintf("takes arm %d → %s", d.Arm, d.Target)
}

// Decisions lists the decisions a turn's kitsoki.decisions events record,
// in order.
func Decisions(evs []trace.Event) []Decision {
	var out []Decision
	for i := range evs {
		if evs[i].Kind != orchestrator.KindDecisions {
			continue
		}
		var p trace.Decisions
		if trace.Decode(&evs[i], &p) != nil {
			continue
		}
		for _, x := range p.Decisions {
			d := Decision{State: x.State, Namespace: x.Namespace, Call: x.Call, Intent: x.Intent, Target: x.Target}
			if x.Arm != nil {
				d.Arm = *x.Arm
			}
			out = append(out, d)
		}
	}
	return out
}

// Divergence is the first decision a changed story makes differently from
// the journal.
type Divergence struct {
	Turn    int64
	State   string
	Journal *Decision // nil: the journal made no further decision
	Story   *Decision // nil: the story makes no further decision
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("turn %d in %s: the journal %s, the story now %s", d.Turn, d.State, d.Journal.phrase(true), d.Story.phrase(false))
}

// Compare returns where the decisions of a replayed turn first differ from
// the journal's, nil when they are the same. state is where the turn
// started.
func Compare(turn int64, state string, journal, replay []Decision) *Divergence {
	for i := 0; i < max(len(journal), len(replay)); i++ {
		var a, b *Decision
		if i < len(journal) {
			a = &journal[i]
		}
		if i < len(replay) {
			b = &replay[i]
		}
		if a != nil && b != nil && *a == *b {
			continue
		}
		at := state
		switch {
		case a != nil && a.State != "":
			at = a.State
		case b != nil && b.State != "":
			at = b.State
		}
		return &Divergence{Turn: turn, State: at, Journal: a, Story: b}
	}
	return nil
}

// Replaying answers every call of the turns given from their recorded
// answers, by position in the turn; a call the journal has no answer for
// fails (the check reports the difference in the calls queued).
func Replaying(turns []TurnEvents) orchestrator.Dispatcher {
	r := &replaying{calls: map[int64][]Call{}, next: map[int64]int{}}
	for _, t := range turns {
		r.calls[t.Turn] = t.Calls
	}
	return r
}

type replaying struct {
	mu    sync.Mutex
	calls map[int64][]Call
	next  map[int64]int
}

var errNoAnswer = errors.New("the journal has no answer for this call")

func (r *replaying) Dispatch(_ context.Context, call *host.Call) (*host.Result, error) {
	r.mu.Lock()
	k := r.next[call.Turn]
	r.next[call.Turn]++
	cs := r.calls[call.Turn]
	r.mu.Unlock()
	if k >= len(cs) || cs[k].Namespace != call.Namespace || !cs[k].Returned {
		return &host.Result{Err: errNoAnswer}, nil
	}
	res := &host.Result{Data: cloneMap(cs[k].Data)}
	if cs[k].Error != "" {
		res.Err = &RecordedError{Msg: cs[k].Error}
	}
	return res, nil
}

// Take runs one recorded input as turn n of sess: free text through Say,
// a typed line parsed by the story, a bare "[intent] name" as that intent,
// a back (":back") through Back.
func Take(ctx context.Context, sess *orchestrator.Session, n int64, in Input) (*orchestrator.Outcome, error) {
	sess.SetTurnNumber(n - 1)
	if in.Intent == "" {
		return sess.Say(ctx, in.Text)
	}
	if in.Intent == orchestrator.BackIntent && in.Text == ":back" {
		return sess.Back(ctx)
	}
	if name, ok := strings.CutPrefix(in.Text, "[intent] "); ok && name == in.Intent {
		return sess.Turn(ctx, in.Intent, nil, "")
	}
	intent, slots, err := sess.ParseInput(in.Text)
	if err != nil {
		return nil, fmt.Errorf("turn %d's input %q: %w", n, in.Text, err)
	}
	return sess.Turn(ctx, intent, slots, in.Text)
}

// Seed is how turn 0 of a journal started the session: the root state of
// the seed transition and the world values set after it.
func Seed(t TurnEvents) (root string, world map[string]any) {
	world = map[string]any{}
	seen := false
	for i := range t.Events {
		ev := &t.Events[i]
		switch ev.Kind {
		case trace.KindMachineTransition:
			if !seen {
				root, _ = ev.Payload["to"].(string)
				seen = true
				continue
			}
			return root, world
		case trace.KindWorldUpdate:
			if set, ok := ev.Payload["set"].(map[string]any); ok && seen {
				for k, v := range set {
					world[k] = Normalize(v)
				}
				continue
			}
			return root, world
		case KindResumed:
			continue
		default:
			if seen {
				return root, world
			}
		}
	}
	return root, world
}

// SortedIDs is a helper for messages.
func SortedIDs(ms []Meta) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return ids
}

// ErrNoTurn0 is ReadTurn0's error for a journal that holds its header
// only: the process stopped before turn 0 wrote a line, so a resume
// starts turn 0 anew.
var ErrNoTurn0 = errors.New("no turn 0")

// ReadTurn0 reads the events of turn 0 from the start of a journal (its
// last attempt), stopping at the first line of turn 1.
func ReadTurn0(path string) (TurnEvents, error) {
	f, err := os.Open(path)
	if err != nil {
		return TurnEvents{}, fmt.Errorf("session journal: %w", err)
	}
	defer f.Close()
	l := newLines(f)
	if _, err := l.r.ReadBytes('\n'); err != nil { // the header
		return TurnEvents{}, fmt.Errorf("session journal %s: %w", path, err)
	}
	var evs []trace.Event
	for {
		ev, err := l.next()
		if errors.Is(err, io.EOF) || (err == nil && ev.Turn > 0) {
			break
		}
		if err != nil {
			return TurnEvents{}, fmt.Errorf("session journal %s: %w", path, err)
		}
		evs = append(evs, ev)
	}
	ts := Turns(evs)
	if len(ts) == 0 {
		return TurnEvents{}, fmt.Errorf("session journal %s: %w", path, ErrNoTurn0)
	}
	return ts[0], nil
}
