// Package session keeps durable sessions: the sessions directory (one
// trace, the journal, and one small index file per session), reading a
// journal back into the state, world and unfinished turn a resume needs,
// the answers of calls that completed before a crash, forks, and the
// nondeterminism check's comparison of decisions. It builds no runtime:
// internal/run/runtime opens a resumed session with what Load returns.
package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// KindResumed is the first event of a resumed attempt at a turn: the turn
// a crash left unfinished (redo), or the next one (payload trace.Resumed).
const KindResumed = trace.KindResumed

// Journal is what a session's trace says about where it stopped.
type Journal struct {
	Path   string
	Header trace.Header
	// Size is the file's length when it was read.
	Size int64
	// StoryHash is the content hash of the story the journal's last
	// turns ran (the last snapshot's, else the header's); "" for a trace
	// that does not record it.
	StoryHash string
	// Started is false when turn 0 never finished (no snapshot at all):
	// the session must start again from the story's root.
	Started bool
	// State, World and Turn are where the last finished turn left the
	// session.
	State string
	World map[string]any
	Turn  int64
	// Done is set when the last finished turn reached a terminal state;
	// Exit names its @exit: target.
	Done bool
	Exit string
	// Partial is the turn a crash left unfinished, nil when none.
	Partial *Partial
	// Inputs are the inputs of the turns read (those after the last
	// snapshot), by turn, the unfinished one included.
	Inputs map[int64]Input
	// LastTS is the time of the last event; LastError the world's
	// last_error after the last finished turn.
	LastTS time.Time
	// Jobs are the background jobs the journal shows as not ended: the
	// last snapshot's, then the job events after it. They ran in the
	// process that wrote the journal; a session resumed in another
	// process does not have them.
	Jobs trace.OpenJobs
}

// Input is a turn's input as turn.input recorded it.
type Input struct {
	Text   string // what was typed, or "[intent] name"
	Intent string // "" for free text
}

// Partial is an unfinished turn: its input and the calls its attempts
// dispatched, in dispatch order.
type Partial struct {
	Turn  int64
	Input Input
	// HasInput is false for turn 0 (the initial entry has no input).
	HasInput bool
	Calls    []Call
}

// Call is one dispatched call of an unfinished turn.
type Call struct {
	Namespace string
	Call      string // the invoke's id: (with.call), "" without one
	State     string // the state it was dispatched in
	// Returned is set when the call's harness.returned was written: its
	// answer (Data, Error) is used instead of issuing it again.
	Returned bool
	Data     map[string]any
	Error    string
}

// Cost is the world's session_cost_usd.
func (j *Journal) Cost() float64 {
	f, _ := number.Float(j.World["session_cost_usd"])
	return f
}

// LastError is the world's last_error.
func (j *Journal) LastError() string { s, _ := j.World["last_error"].(string); return s }

// Load reads the journal at path from its last snapshot on. Its cost grows
// with the lines after that snapshot, not with the file's length.
func Load(path string) (*Journal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("session journal: %w", err)
	}
	j := &Journal{Path: path, Size: fi.Size(), Inputs: map[int64]Input{}}
	head, err := readHeader(f, j.Size)
	if err != nil {
		return nil, fmt.Errorf("session journal %s: %w", path, err)
	}
	j.Header = head.h
	j.StoryHash = head.h.StoryHash
	from, err := lastSnapshot(f, j.Size, head.end)
	if err != nil {
		return nil, fmt.Errorf("session journal %s: %w", path, err)
	}
	if err := j.fold(newLines(io.NewSectionReader(f, from, j.Size-from)).next); err != nil {
		return nil, fmt.Errorf("session journal %s: %w", path, err)
	}
	return j, nil
}

// ReadAll reads a whole journal through the trace reader (every read rule)
// and folds it up to turn upTo (-1: all of it): the fork and the
// nondeterminism check use it.
func ReadAll(path string, upTo int64) (*Journal, []trace.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("session journal: %w", err)
	}
	defer f.Close()
	h, evs, err := trace.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("session journal %s: %w", path, err)
	}
	fi, _ := f.Stat()
	j := &Journal{Path: path, Header: h, StoryHash: h.StoryHash, Inputs: map[int64]Input{}}
	if fi != nil {
		j.Size = fi.Size()
	}
	i := 0
	next := func() (trace.Event, error) {
		if i >= len(evs) || (upTo >= 0 && evs[i].Turn > upTo) {
			return trace.Event{}, io.EOF
		}
		i++
		return evs[i-1], nil
	}
	if err := j.fold(next); err != nil {
		return nil, nil, fmt.Errorf("session journal %s: %w", path, err)
	}
	return j, evs, nil
}

type header struct {
	h   trace.Header
	end int64 // offset after line 1
}

func readHeader(f io.ReaderAt, size int64) (header, error) {
	buf := make([]byte, min(size, 64<<10))
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return header{}, err
	}
	buf = buf[:n]
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		return header{}, errors.New("trace missing session.header on line 1")
	}
	h, err := trace.DecodeHeader(buf[:nl])
	if err != nil {
		return header{}, err
	}
	return header{h: h, end: int64(nl) + 1}, nil
}

var snapshotMark = []byte(`"kind":"` + orchestrator.KindSnapshot + `"`)

// lastSnapshot returns the offset of the last snapshot line, reading the
// file backwards in growing windows; with none, the offset after the
// header (the whole file is read: a session whose turn 0 never finished).
func lastSnapshot(f io.ReaderAt, size, floor int64) (int64, error) {
	if _, _, err := trace.LastLine(f, size); err != nil {
		return 0, err
	}
	win := int64(256 << 10)
	for {
		from := max(size-win, floor)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		// Lines end at each '\n'; the first one is whole only when the
		// window starts at the floor or right after a newline.
		end := len(buf)
		for end > 0 {
			start := bytes.LastIndexByte(buf[:end-1], '\n') + 1
			if start == 0 && from > floor {
				break // cut: look in a wider window
			}
			line := buf[start : end-1]
			if bytes.Contains(line, snapshotMark) {
				if ev, err := trace.DecodeLine(line); err == nil && ev.Kind == orchestrator.KindSnapshot {
					return from + int64(start), nil
				}
			}
			end = start
		}
		if from == floor {
			return floor, nil
		}
		win *= 4
	}
}

// attempt is one attempt at a turn: its events from a kitsoki.resumed
// marker (or the turn's start) to the next marker.
type attempt struct {
	evs []trace.Event
}

// fold reads events in order and rebuilds where the session stopped.
func (j *Journal) fold(next func() (trace.Event, error)) error {
	var (
		cur      int64 = -1
		attempts []attempt
	)
	flush := func() error {
		if cur < 0 {
			return nil
		}
		return j.turnDone(cur, attempts)
	}
	for {
		ev, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if ts, err := time.Parse(time.RFC3339Nano, ev.TS); err == nil {
			j.LastTS = ts
		}
		if ev.Turn != cur {
			if ev.Turn < cur {
				return fmt.Errorf("turn %d after turn %d: out-of-order turn", ev.Turn, cur)
			}
			if err := flush(); err != nil {
				return err
			}
			cur, attempts = ev.Turn, []attempt{{}}
		}
		if ev.Kind == KindResumed {
			attempts = append(attempts, attempt{})
		}
		a := &attempts[len(attempts)-1]
		a.evs = append(a.evs, ev)
	}
	return flush()
}

// turnDone applies one turn's attempts: the last one, when it finished,
// updates state and world; otherwise the turn is the unfinished one.
func (j *Journal) turnDone(n int64, attempts []attempt) error {
	last := attempts[len(attempts)-1].evs
	finished, snap := false, false
	for i := range last {
		ev := &last[i]
		switch ev.Kind {
		case orchestrator.KindSnapshot:
			if err := j.applySnapshot(ev); err != nil {
				return err
			}
			finished, snap = true, true
		case trace.KindTurnEnd:
			finished = true
		case trace.KindJobStarted, trace.KindJobAwaitingInput, trace.KindJobCompleted:
			p, _ := trace.NewPayload(ev.Kind)
			if err := trace.Decode(ev, p); err != nil {
				return fmt.Errorf("turn %d: %w", ev.Turn, err)
			}
			j.Jobs = j.Jobs.Apply(p)
		}
	}
	var in *Input
	for _, a := range attempts {
		for i := range a.evs {
			if a.evs[i].Kind == trace.KindTurnInput {
				var ti trace.TurnInput
				if err := trace.Decode(&a.evs[i], &ti); err != nil {
					return err
				}
				in = &Input{Text: ti.Input, Intent: ti.Intent}
			}
		}
	}
	if in != nil {
		j.Inputs[n] = *in
	}
	if n == 0 && !j.Started && !finished {
		// turn 0 without a snapshot: the initial entry must run again
		j.Partial = &Partial{Turn: 0, Calls: calls(attempts)}
		return nil
	}
	if !finished {
		if in == nil {
			return nil // only a resume marker: nothing was taken
		}
		j.Partial = &Partial{Turn: n, Input: *in, HasInput: true, Calls: calls(attempts)}
		return nil
	}
	j.Partial = nil
	if !j.Started {
		return errors.New("the journal has no snapshot of turn 0: it was not written by a durable session")
	}
	if snap {
		return nil // the snapshot, written at the turn's end, holds it
	}
	for i := range last {
		ev := &last[i]
		switch ev.Kind {
		case trace.KindWorldUpdate:
			if err := j.applyUpdate(ev); err != nil {
				return err
			}
		case trace.KindTurnEnd:
			if ev.StatePath != "" {
				j.State = ev.StatePath
			}
		}
	}
	j.Turn = n
	j.Done, j.Exit = false, ""
	return nil
}

func (j *Journal) applySnapshot(ev *trace.Event) error {
	var p trace.Snapshot
	if err := trace.Decode(ev, &p); err != nil {
		return err
	}
	if p.State == "" || p.World == nil {
		return fmt.Errorf("turn %d: a %s event without state and world", ev.Turn, orchestrator.KindSnapshot)
	}
	j.Started = true
	j.State, j.Turn = p.State, ev.Turn
	j.World = Normalize(p.World).(map[string]any)
	j.Done, j.Exit = p.Done, p.Exit
	j.Jobs = p.Jobs
	if p.StoryHash != "" {
		j.StoryHash = p.StoryHash
	}
	return nil
}

// applyUpdate replays a world.update: set and increment change the world,
// a skipped once call changes nothing.
func (j *Journal) applyUpdate(ev *trace.Event) error {
	var u trace.WorldUpdate
	if err := trace.Decode(ev, &u); err != nil {
		return err
	}
	switch {
	case u.Set != nil:
		for k, v := range u.Set {
			j.World[k] = Normalize(v)
		}
	case u.Increment != nil:
		for k, by := range u.Increment {
			j.World[k] = number.Increment(j.World[k], by) // the live reading: "3" counts 3
		}
	case u.Skipped != "":
	default:
		return fmt.Errorf("turn %d, seq %d: a world.update this kitsoki cannot replay (neither set, increment nor skipped)", ev.Turn, ev.Seq)
	}
	return nil
}

// calls merges the dispatched calls of a turn's attempts by position: a
// call any attempt saw return has that answer.
func calls(attempts []attempt) []Call {
	var out []Call
	for _, a := range attempts {
		k := -1
		for i := range a.evs {
			ev := &a.evs[i]
			switch ev.Kind {
			case trace.KindHarnessDispatched:
				k++
				ns, _ := ev.Payload["namespace"].(string)
				args, _ := ev.Payload["args"].(map[string]any)
				id, _ := args["call"].(string)
				if k >= len(out) {
					out = append(out, Call{Namespace: ns, Call: id, State: ev.StatePath})
				}
			case trace.KindHarnessReturned:
				if k < 0 || k >= len(out) || out[k].Returned {
					continue
				}
				var r trace.HarnessReturned
				if err := trace.Decode(ev, &r); err != nil {
					continue
				}
				out[k].Returned = true
				if r.Data != nil {
					out[k].Data = Normalize(r.Data).(map[string]any)
				}
				out[k].Error = r.Error
			}
		}
	}
	return out
}

// Normalize turns the reader's json.Number values into int64 (integers)
// or float64, at any depth, so a world read back evaluates like the live
// one.
func Normalize(v any) any {
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = Normalize(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = Normalize(e)
		}
		return l
	}
	return v
}

// lines decodes event lines one at a time.
type lines struct {
	r *bufio.Reader
	n int
}

func newLines(r io.Reader) *lines { return &lines{r: bufio.NewReaderSize(r, 64<<10)} }

func (l *lines) next() (trace.Event, error) {
	line, err := l.r.ReadBytes('\n')
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return trace.Event{}, io.EOF
	}
	if err != nil {
		return trace.Event{}, fmt.Errorf("line %d after the last snapshot: %w", l.n+1, err)
	}
	line = line[:len(line)-1]
	l.n++
	ev, err := trace.DecodeLine(line)
	if err != nil {
		return trace.Event{}, fmt.Errorf("line %d after the last snapshot: %w", l.n, err)
	}
	return ev, nil
}

// Retype gives the top-level world values read back from a journal the
// Go types the story's declarations give live values: JSON writes 0.0 as
// 0, which reads back as an integer, so a float key holding an integer is
// made a float again (and an int key holding an integral float an int).
func Retype(st *story.Story, w map[string]any) {
	for _, v := range st.World {
		switch x := w[v.Name].(type) {
		case int64:
			if v.Type == "float" {
				w[v.Name] = float64(x)
			}
		case float64:
			if v.Type == "int" && x == float64(int64(x)) {
				w[v.Name] = int64(x)
			}
		}
	}
}
