// Package traceview reads a run's trace into turns and calls (Build) and
// shows it: as a terminal report (Report, Follow) and as one
// self-contained HTML page (HTML, Server). It only reads traces; what it
// shows is what the trace holds, which kitsoki's writer has masked
// already, so no secret is looked up again.
package traceview

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
)

// Run is a trace read into turns.
type Run struct {
	Path          string `json:"path"`
	SchemaVersion int    `json:"schema_version"`
	WrittenAt     string `json:"written_at"`
	// Session is what the header says about the session (app id, story,
	// session id, kitsoki version); empty for traces written before
	// headers said it.
	Session trace.HeaderInfo `json:"session"`
	Events  int              `json:"events"`
	// Complete is false while a writer still holds the trace open (set by
	// Load's callers that know it; Build leaves it true).
	Complete bool    `json:"complete"`
	Turns    []*Turn `json:"turns"`
	Totals   Totals  `json:"totals"`
	// State is the state the run is in after its last transition.
	State string `json:"state"`
}

// Totals adds up a run.
type Totals struct {
	Turns        int            `json:"turns"` // user turns (turn 0 is not counted)
	AgentCalls   int            `json:"agent_calls"`
	HostCalls    int            `json:"host_calls"`
	InputTokens  int64          `json:"input_tokens"`
	OutputTokens int64          `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
	Errors       int            `json:"errors"` // failed calls, rejected and aborted turns
	ErrorKinds   map[string]int `json:"error_kinds,omitempty"`
	DurationMS   float64        `json:"duration_ms"` // first to last event
}

// Turn is one turn: what came in, how it was routed, what the machine
// did, the calls it made and how it ended.
type Turn struct {
	N           int64             `json:"n"`
	Input       string            `json:"input,omitempty"`
	Intent      string            `json:"intent,omitempty"`
	Direct      bool              `json:"direct,omitempty"`
	Slots       map[string]any    `json:"slots,omitempty"`
	Routed      *trace.TurnRouted `json:"routed,omitempty"`
	Transitions []Transition      `json:"transitions,omitempty"`
	Items       []*Item           `json:"items"`
	End         *trace.TurnEnd    `json:"end,omitempty"`
	StartMS     float64           `json:"start_ms"` // since the run's first event
	DurationMS  float64           `json:"duration_ms"`
	last        time.Time
}

// Transition is one machine.transition.
type Transition struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Intent string `json:"intent"`
}

// Item is one thing a turn did, in trace order: exactly one field is set.
type Item struct {
	Transition *Transition                    `json:"transition,omitempty"`
	World      *WorldChange                   `json:"world,omitempty"`
	Say        string                         `json:"say,omitempty"`
	Call       *Call                          `json:"call,omitempty"`
	Rejected   *trace.MachineValidationFailed `json:"rejected,omitempty"`
	Fault      *trace.MachineError            `json:"fault,omitempty"`
	Harness    *trace.HarnessError            `json:"harness_error,omitempty"`
	Other      *OtherEvent                    `json:"other,omitempty"`
}

// WorldChange is one world.update, with the value before when the trace
// showed it earlier.
type WorldChange struct {
	Key    string `json:"key"`
	Op     string `json:"op"` // set, increment, cached
	Value  any    `json:"value,omitempty"`
	Before any    `json:"before,omitempty"`
	Known  bool   `json:"known"` // Before is the value the trace last set
}

// OtherEvent is an event of a kind this package does not read (Kitsoki's
// kinds, a feature's): shown by kind.
type OtherEvent struct {
	Kind    string         `json:"kind"`
	Payload map[string]any `json:"payload,omitempty"`
}

// Call is a host call (harness.dispatched … harness.returned) or an
// agent call (agent.call.start … .complete/.error). Agent calls made by a
// host call are its Children; a router agent call of a free-text turn
// stands on its own.
type Call struct {
	Type      string         `json:"type"` // host or agent
	Namespace string         `json:"namespace,omitempty"`
	Args      map[string]any `json:"args,omitempty"`
	Data      map[string]any `json:"data,omitempty"`

	CallID       string              `json:"call_id,omitempty"`
	Verb         string              `json:"verb,omitempty"`
	Agent        string              `json:"agent,omitempty"`
	Model        string              `json:"model,omitempty"`
	Purpose      string              `json:"purpose,omitempty"`
	Prompt       string              `json:"prompt,omitempty"`
	Answer       any                 `json:"answer,omitempty"`
	Schema       string              `json:"schema,omitempty"` // valid, invalid, or "" when no schema applied
	Substitution *trace.Substitution `json:"substitution,omitempty"`
	InputTokens  int64               `json:"input_tokens,omitempty"`
	OutputTokens int64               `json:"output_tokens,omitempty"`
	CostUSD      float64             `json:"cost_usd,omitempty"`
	HasUsage     bool                `json:"has_usage,omitempty"`
	HasCost      bool                `json:"has_cost,omitempty"`

	Error      string `json:"error,omitempty"`
	ErrorKind  string `json:"error_kind,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Recorded is true when DurationMS is the duration a cassette
	// recorded (a replayed call takes no time of its own).
	Recorded  bool          `json:"recorded,omitempty"`
	StartMS   float64       `json:"start_ms"` // since the run's first event
	Open      bool          `json:"open,omitempty"`
	SubEvents []*OtherEvent `json:"sub_events,omitempty"`
	// Transcript is the agent call's agent-action transcript, when the
	// trace points at one.
	Transcript *Transcript    `json:"transcript,omitempty"`
	World      []*WorldChange `json:"world,omitempty"` // binds written while the call was open
	Children   []*Call        `json:"children,omitempty"`
	startTS    time.Time
}

// Load reads a trace file and builds its run. A trace still being
// written may end in a partial line: Load reads up to its last newline.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: the trace is empty (no session.header yet)", path)
	}
	r, err := Read(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	LoadTranscripts(r, filepath.Dir(path))
	return r, nil
}

// Read reads a whole trace (every read rule applies) and builds its run.
func Read(rd io.Reader) (*Run, error) {
	h, evs, err := trace.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	r := Build(evs)
	r.SchemaVersion, r.WrittenAt, r.Session = h.SchemaVersion, h.WrittenAt, h.HeaderInfo
	return r, nil
}

// Build turns events, in file order, into a run.
func Build(evs []trace.Event) *Run {
	b := &builder{run: &Run{Complete: true, Turns: []*Turn{}}, world: map[string]any{}, agents: map[string]*Call{}}
	for i := range evs {
		b.add(&evs[i])
	}
	b.finish()
	return b.run
}

type builder struct {
	run    *Run
	turn   *Turn
	host   []*Call          // open host calls, innermost last
	agents map[string]*Call // open agent calls by call_id
	world  map[string]any
	first  time.Time
	last   time.Time
}

func (b *builder) since(t time.Time) float64 {
	if t.IsZero() || b.first.IsZero() {
		return 0
	}
	return float64(t.Sub(b.first).Microseconds()) / 1000
}

// add folds one event into the run: the clock, the turn it belongs to,
// then what the event says about the turn or about a call; an event of any
// other kind is kept as it is.
func (b *builder) add(ev *trace.Event) {
	b.run.Events++
	ts, _ := time.Parse(time.RFC3339Nano, ev.TS)
	t := b.turnOf(ev, ts)
	if b.addTurnEvent(t, ev) || b.addCallEvent(ev, ts) {
		return
	}
	o := &OtherEvent{Kind: ev.Kind, Payload: ev.Payload}
	if c := b.agents[ev.CallID]; ev.CallID != "" && c != nil {
		c.SubEvents = append(c.SubEvents, o)
		return
	}
	t.Items = append(t.Items, &Item{Other: o})
}

// turnOf moves the run's clock to the event's time and returns the turn
// the event belongs to, closing the current one and opening the next when
// the turn number changes.
func (b *builder) turnOf(ev *trace.Event, ts time.Time) *Turn {
	if !ts.IsZero() {
		if b.first.IsZero() {
			b.first = ts
		}
		if ts.After(b.last) {
			b.last = ts
		}
	}
	if b.turn == nil || b.turn.N != ev.Turn {
		b.closeTurn()
		b.turn = &Turn{N: ev.Turn, StartMS: b.since(ts), Items: []*Item{}}
		b.run.Turns = append(b.run.Turns, b.turn)
		if ev.Turn > 0 {
			b.run.Totals.Turns++
		}
	}
	if !ts.IsZero() {
		b.turn.last = ts
	}
	return b.turn
}

// addTurnEvent folds an event about the turn itself (its input, routing,
// transitions, says, rejections, faults, world updates, its end) into t,
// and reports whether the event was of such a kind.
func (b *builder) addTurnEvent(t *Turn, ev *trace.Event) bool {
	switch ev.Kind {
	case trace.KindTurnInput:
		var p trace.TurnInput
		if trace.Decode(ev, &p) == nil {
			t.Input = p.Input
			if p.Intent != "" {
				t.Intent = p.Intent
			}
		}
	case trace.KindTurnStart:
		var p trace.TurnStart
		if trace.Decode(ev, &p) == nil {
			t.Direct = p.Direct
			if t.Input == "" {
				t.Input = p.Input
			}
		}
	case trace.KindTurnRouted:
		var p trace.TurnRouted
		if trace.Decode(ev, &p) == nil {
			t.Routed = &p
			if p.Intent != "" {
				t.Intent = p.Intent
			}
		}
	case trace.KindMachineIntentAccepted:
		var p trace.MachineIntentAccepted
		if trace.Decode(ev, &p) == nil {
			t.Intent, t.Slots = p.Intent, p.Slots
		}
	case trace.KindMachineTransition:
		var p trace.MachineTransition
		if trace.Decode(ev, &p) == nil {
			tr := Transition{From: p.From, To: p.To, Intent: p.Intent}
			t.Transitions = append(t.Transitions, tr)
			t.Items = append(t.Items, &Item{Transition: &tr})
			b.run.State = p.To
		}
	case trace.KindMachineSay:
		var p trace.MachineSay
		if trace.Decode(ev, &p) == nil {
			t.Items = append(t.Items, &Item{Say: p.Text})
		}
	case trace.KindMachineStateEntered, trace.KindMachineStateExited, trace.KindHarnessCalled:
		// The transitions say where the machine went; harness.called is
		// the queued form of the dispatch that follows.
	case trace.KindMachineValidationFailed:
		var p trace.MachineValidationFailed
		if trace.Decode(ev, &p) == nil {
			t.Items = append(t.Items, &Item{Rejected: &p})
			b.countError("rejected")
		}
	case trace.KindMachineError:
		var p trace.MachineError
		if trace.Decode(ev, &p) == nil {
			t.Items = append(t.Items, &Item{Fault: &p})
			b.countError("fault")
		}
	case trace.KindHarnessError:
		var p trace.HarnessError
		if trace.Decode(ev, &p) == nil {
			t.Items = append(t.Items, &Item{Harness: &p})
		}
	case trace.KindWorldUpdate:
		b.worldUpdate(ev)
	case trace.KindTurnEnd:
		var p trace.TurnEnd
		if trace.Decode(ev, &p) == nil {
			t.End = &p
			if p.To != "" {
				b.run.State = p.To
			}
		}
	default:
		return false
	}
	return true
}

// addCallEvent folds an event about a host or an agent call into the call
// tree, and reports whether the event was of such a kind.
func (b *builder) addCallEvent(ev *trace.Event, ts time.Time) bool {
	switch ev.Kind {
	case trace.KindHarnessDispatched:
		var p trace.HarnessDispatched
		if trace.Decode(ev, &p) == nil {
			c := &Call{Type: "host", Namespace: p.Namespace, Args: p.Args, StartMS: b.since(ts), startTS: ts, Open: true}
			b.attach(c)
			b.host = append(b.host, c)
			b.run.Totals.HostCalls++
		}
	case trace.KindHarnessReturned:
		var p trace.HarnessReturned
		if trace.Decode(ev, &p) == nil {
			b.hostReturned(&p, ts)
		}
	case trace.KindAgentCallStart:
		var p trace.AgentCallStart
		if trace.Decode(ev, &p) == nil {
			c := &Call{Type: "agent", CallID: ev.CallID, Verb: p.Verb, Agent: p.Agent, Model: p.Model,
				Purpose: p.Purpose, Prompt: p.Prompt, StartMS: b.since(ts), startTS: ts, Open: true}
			b.attach(c)
			if ev.CallID != "" {
				b.agents[ev.CallID] = c
			}
			b.run.Totals.AgentCalls++
		}
	case trace.KindAgentCallComplete:
		var p trace.AgentCallComplete
		if trace.Decode(ev, &p) == nil {
			b.agentCompleted(ev, &p)
		}
	case trace.KindAgentCallError:
		var p trace.AgentCallError
		if trace.Decode(ev, &p) == nil {
			b.agentFailed(ev, &p)
		}
	default:
		return false
	}
	return true
}

// hostReturned closes the innermost open host call of the namespace: its
// data, error and duration. A replayed agent call takes no time but keeps
// the duration it was recorded with, so the host call that made it lasted
// at least as long as its children. Its error counts once, unless a child
// call failed and counted it.
func (b *builder) hostReturned(p *trace.HarnessReturned, ts time.Time) {
	for i := len(b.host) - 1; i >= 0; i-- {
		c := b.host[i]
		if c.Namespace != p.Namespace {
			continue
		}
		c.Data, c.Error, c.Open = p.Data, p.Error, false
		if !c.startTS.IsZero() && !ts.IsZero() {
			c.DurationMS = ts.Sub(c.startTS).Milliseconds()
		}
		var inner int64
		for _, ch := range c.Children {
			inner += ch.DurationMS
			c.Recorded = c.Recorded || ch.Recorded
		}
		c.DurationMS = max(c.DurationMS, inner)
		if p.Error != "" && !hasFailedChild(c) {
			b.countError(kindOf(p.Error))
		}
		b.host = append(b.host[:i], b.host[i+1:]...)
		break
	}
}

// agentCompleted closes an agent call with its answer (the submission of
// a response that has one), its usage, and its schema marked valid when
// the call had one to check.
func (b *builder) agentCompleted(ev *trace.Event, p *trace.AgentCallComplete) {
	c := b.agentCall(ev, p.Verb)
	c.Open = false
	if p.Agent != "" {
		c.Agent = p.Agent
	}
	if p.Model != "" {
		c.Model = p.Model
	}
	c.DurationMS, c.Substitution, c.Transcript = p.DurationMS, p.Substitution, transcriptOf(p.TranscriptRef)
	meta := p.Meta
	if resp, ok := p.Response.(map[string]any); ok {
		if sub, ok := resp["submission"]; ok {
			c.Answer = sub
		} else {
			c.Answer = p.Response
		}
		if meta == nil {
			meta, _ = resp["meta"].(map[string]any)
		}
	} else {
		c.Answer = p.Response
	}
	if b.schemaApplies(c) {
		c.Schema = "valid"
	}
	b.usage(c, meta)
	delete(b.agents, ev.CallID)
}

// agentFailed closes an agent call with its error, and counts the error by
// its kind.
func (b *builder) agentFailed(ev *trace.Event, p *trace.AgentCallError) {
	c := b.agentCall(ev, p.Verb)
	c.Open = false
	if p.Model != "" {
		c.Model = p.Model
	}
	c.DurationMS, c.Error, c.ErrorKind, c.Substitution = p.DurationMS, p.Error, p.ErrorKind, p.Substitution
	c.Transcript = transcriptOf(p.TranscriptRef)
	if p.ErrorKind == "schema_invalid" {
		c.Schema = "invalid"
	}
	b.countError(p.ErrorKind)
	delete(b.agents, ev.CallID)
}

// attach puts a new call under the innermost open host call, or on the
// turn.
func (b *builder) attach(c *Call) {
	if c.Type == "agent" && len(b.host) > 0 {
		h := b.host[len(b.host)-1]
		h.Children = append(h.Children, c)
		return
	}
	b.turn.Items = append(b.turn.Items, &Item{Call: c})
}

// agentCall is the open agent call an event closes; a close without a
// start (a cut trace) gets a call of its own.
func (b *builder) agentCall(ev *trace.Event, verb string) *Call {
	if c := b.agents[ev.CallID]; c != nil {
		return c
	}
	c := &Call{Type: "agent", CallID: ev.CallID, Verb: verb}
	b.attach(c)
	b.run.Totals.AgentCalls++
	return c
}

// schemaApplies: the host validated the submission against with.schema.
func (b *builder) schemaApplies(c *Call) bool {
	for _, h := range b.host {
		for _, ch := range h.Children {
			if ch == c {
				_, ok := h.Args["schema"]
				return ok
			}
		}
	}
	return false
}

func (b *builder) usage(c *Call, meta map[string]any) {
	if meta == nil {
		return
	}
	if m, ok := meta["model"].(string); ok && c.Model == "" {
		c.Model = m
	}
	u := usage.FromMeta(meta)
	if u.HasTokens {
		c.InputTokens, c.OutputTokens, c.HasUsage = u.InputTokens, u.OutputTokens, true
		b.run.Totals.InputTokens += u.InputTokens
		b.run.Totals.OutputTokens += u.OutputTokens
	}
	if u.HasCost {
		c.CostUSD, c.HasCost = u.CostUSD, true
		b.run.Totals.CostUSD += u.CostUSD
	}
	if meta["transport"] == "cassette" {
		if d, ok := number.Int(meta["duration_ms"]); ok {
			c.DurationMS, c.Recorded = d, true
		}
	}
}

func (b *builder) countError(kind string) {
	b.run.Totals.Errors++
	if kind == "" {
		kind = "error"
	}
	if b.run.Totals.ErrorKinds == nil {
		b.run.Totals.ErrorKinds = map[string]int{}
	}
	b.run.Totals.ErrorKinds[kind]++
}

func (b *builder) worldUpdate(ev *trace.Event) {
	var p trace.WorldUpdate
	if trace.Decode(ev, &p) != nil {
		return
	}
	var changes []*WorldChange
	for _, k := range sortedKeys(p.Set) {
		before, known := b.world[k]
		changes = append(changes, &WorldChange{Key: k, Op: "set", Value: p.Set[k], Before: before, Known: known})
		b.world[k] = p.Set[k]
	}
	ks := make([]string, 0, len(p.Increment))
	for k := range p.Increment {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		before, known := b.world[k]
		changes = append(changes, &WorldChange{Key: k, Op: "increment", Value: p.Increment[k], Before: before, Known: known})
		if known {
			b.world[k] = number.Increment(before, p.Increment[k])
		} else {
			delete(b.world, k)
		}
	}
	if p.Skipped != "" {
		changes = append(changes, &WorldChange{Key: p.Namespace, Op: p.Skipped})
	}
	for _, c := range changes {
		if len(b.host) > 0 {
			h := b.host[len(b.host)-1]
			h.World = append(h.World, c)
			continue
		}
		b.turn.Items = append(b.turn.Items, &Item{World: c})
	}
}

func (b *builder) closeTurn() {
	if b.turn != nil && !b.turn.last.IsZero() {
		b.turn.DurationMS = b.since(b.turn.last) - b.turn.StartMS
	}
	b.host = b.host[:0]
}

func (b *builder) finish() {
	b.closeTurn()
	b.run.Totals.DurationMS = b.since(b.last)
}

func hasFailedChild(c *Call) bool {
	for _, ch := range c.Children {
		if ch.Error != "" {
			return true
		}
	}
	return false
}

// kindOf is the AskError kind of "agent: <kind>: <detail>", or "".
func kindOf(msg string) string {
	rest, ok := strings.CutPrefix(msg, "agent: ")
	if !ok {
		return ""
	}
	k, _, _ := strings.Cut(rest, ":")
	return k
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
