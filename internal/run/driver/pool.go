package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/plugin"
)

// KindAPICall is the trace event of a session API call that reached a
// live session (an MCP tool call): which surface, which tool, which
// client. It is written between turns, at the session's current turn.
const KindAPICall = "kitsoki.api.call"

// Audit names the caller of a session API call, for the trace.
type Audit struct {
	// Surface is the front end ("mcp"); Tool the call (session_submit_kitsoki);
	// Client the client's session id at that surface.
	Surface, Tool, Client string
}

// ErrPoolFull is a Pool's error when every live session is taking a turn
// and a new one cannot be opened.
var ErrPoolFull = errors.New("too many live sessions")

// Pool keeps sessions live for a server (the MCP session tools): a
// session opened by a call stays open, its writer lock held, for the next
// call, up to Max sessions; opening one more closes the one used least
// recently that is not taking a turn (it is saved, and picked up from its
// journal when next used). One turn at a time runs in each session.
type Pool struct {
	Sessions *Sessions
	// Max is the cap on live sessions; 0 is DefaultPoolMax.
	Max int

	mu   sync.Mutex
	live map[string]*pooled
	tick uint64
}

// DefaultPoolMax is a Pool's cap when none is set.
const DefaultPoolMax = 16

type pooled struct {
	mu   sync.Mutex // held during a call on the session
	o    *Open
	used uint64
	busy bool
	gone bool // closed: a caller that waited must look again
}

// Create starts a session and keeps it live.
func (p *Pool) Create(ctx context.Context, r CreateRequest, a Audit) (*Frame, error) {
	if err := p.room(); err != nil {
		return nil, err
	}
	o, f, err := p.Sessions.Create(ctx, r)
	if err != nil {
		return nil, err
	}
	e := p.add(o)
	defer p.done(e)
	p.audit(e, a)
	return f, nil
}

// Submit takes one input in the session ref names (opening it when it is
// not live) and reports the turn.
func (p *Pool) Submit(ctx context.Context, ref string, in Input, a Audit) (*Frame, error) {
	e, _, err := p.acquire(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer p.done(e)
	p.audit(e, a)
	return e.o.Continue(ctx, in)
}

// Continue makes the session ref names live (picking it up from its
// journal) and reports where it stands.
func (p *Pool) Continue(ctx context.Context, ref string, a Audit) (*Frame, error) {
	e, f, err := p.acquire(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer p.done(e)
	p.audit(e, a)
	if f != nil {
		return f, nil // the frame of its resume
	}
	return e.o.Frame(ctx)
}

// Inspect reports where the session ref names stands: a live one as it
// is (its background jobs too), any other from its journal.
func (p *Pool) Inspect(ctx context.Context, ref string, a Audit) (*Frame, error) {
	if e := p.lookup(ref); e != nil {
		defer p.done(e)
		p.audit(e, a)
		return e.o.Frame(ctx)
	}
	return p.Sessions.Inspect(ctx, ref)
}

// Close closes every live session (each is saved, its lock released).
func (p *Pool) Close() error {
	p.mu.Lock()
	all := p.live
	p.live = nil
	p.mu.Unlock()
	var errs []error
	for _, e := range all {
		e.mu.Lock()
		if !e.gone {
			e.gone = true
			errs = append(errs, e.o.Close())
		}
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Release closes the live session ref names, if it is live (a delete or
// a fork of it wants its journal as it stands).
func (p *Pool) Release(ref string) error {
	id, err := p.id(ref)
	if err != nil {
		return nil // not a session this pool can hold
	}
	p.mu.Lock()
	e := p.live[id]
	delete(p.live, id)
	p.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return nil
	}
	e.gone = true
	return e.o.Close()
}

// Live is how many sessions the pool holds.
func (p *Pool) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

func (p *Pool) max() int {
	if p.Max <= 0 {
		return DefaultPoolMax
	}
	return p.Max
}

func (p *Pool) id(ref string) (string, error) {
	if !session.IsKey(ref) {
		return ref, session.CheckID(ref)
	}
	m, err := p.Sessions.Store.Find(ref)
	if err != nil {
		return "", Exit(ExitFailure, err)
	}
	return m.ID, nil
}

// lookup returns the live session ref names, locked for a call; nil when
// it is not live.
func (p *Pool) lookup(ref string) *pooled {
	id, err := p.id(ref)
	if err != nil {
		return nil
	}
	for {
		p.mu.Lock()
		e := p.live[id]
		p.mu.Unlock()
		if e == nil {
			return nil
		}
		if e.lock() {
			return e
		}
	}
}

// acquire returns the session ref names, live and locked for a call, and
// the frame of its resume when this call opened it.
func (p *Pool) acquire(ctx context.Context, ref string) (*pooled, *Frame, error) {
	if e := p.lookup(ref); e != nil {
		return e, nil, nil
	}
	if err := p.room(); err != nil {
		return nil, nil, err
	}
	o, f, err := p.Sessions.Resume(ctx, ResumeRequest{Ref: ref})
	if err != nil {
		return nil, nil, err
	}
	return p.add(o), f, nil
}

// lock takes the entry for a call; false when it was closed meanwhile.
func (e *pooled) lock() bool {
	e.mu.Lock()
	if e.gone {
		e.mu.Unlock()
		return false
	}
	e.busy = true
	return true
}

// add keeps o live, locked for the call that opened it.
func (p *Pool) add(o *Open) *pooled {
	e := &pooled{o: o, busy: true}
	e.mu.Lock()
	p.mu.Lock()
	if p.live == nil {
		p.live = map[string]*pooled{}
	}
	p.tick++
	e.used = p.tick
	p.live[o.ID()] = e
	p.mu.Unlock()
	return e
}

// done ends a call on e.
func (p *Pool) done(e *pooled) {
	p.mu.Lock()
	p.tick++
	e.used = p.tick
	e.busy = false
	p.mu.Unlock()
	e.mu.Unlock()
}

// room makes room for one more live session: at the cap, the least
// recently used session not in a call is closed.
func (p *Pool) room() error {
	p.mu.Lock()
	if len(p.live) < p.max() {
		p.mu.Unlock()
		return nil
	}
	var victim *pooled
	for _, e := range p.live {
		if !e.busy && (victim == nil || e.used < victim.used) {
			victim = e
		}
	}
	if victim == nil {
		n := len(p.live)
		p.mu.Unlock()
		return Exit(ExitBusy, fmt.Errorf("%w: all %d are taking a turn; try again when one is done", ErrPoolFull, n))
	}
	delete(p.live, victim.o.ID())
	p.mu.Unlock()
	victim.mu.Lock()
	defer victim.mu.Unlock()
	if !victim.gone {
		victim.gone = true
		return victim.o.Close()
	}
	return nil
}

// audit writes the call into the session's trace.
func (p *Pool) audit(e *pooled, a Audit) {
	if a.Tool == "" {
		return
	}
	l := e.o.Local
	payload := map[string]any{"surface": a.Surface, "tool": a.Tool}
	if a.Client != "" {
		payload["client"] = a.Client
	}
	// Written between turns, then flushed (and fsynced) as a turn's end
	// is, so the record of the call is in the journal when it returns.
	sink := l.rt.Sink()
	if sink.Append(&plugin.Event{Turn: l.sess.TurnNumber(), StatePath: l.sess.State(), Kind: KindAPICall, Payload: payload}) == nil {
		_ = sink.EndTurn()
	}
}
