package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

// What a live session is busy with.
const (
	busyStarting = "starting" // turn 0 of a new session
	busyOpening  = "opening"  // picking a session up from its journal
	busyTurn     = "turn"
)

// live is a session as the server keeps it for its pages: the session it
// holds (nil while it is being opened, and for a finished session, which
// is only looked at), the transcript read from its journal, the graph of
// its story with the path taken, the turn in flight and its calls, and
// the pages following it. Its fields are guarded by mu; the session
// itself is used by one goroutine at a time (the one running a turn, or
// a request while none runs).
type live struct {
	srv   *Server
	id    string
	story *storyInfo
	gen   string // names this copy of the transcript in event ids

	mu       sync.Mutex
	sess     *driver.Open
	meta     session.Meta
	readOnly string // why no input is taken ("" when it is)
	failed   string // why the session could not be opened
	last     *driver.Status
	mask     *secret.Masker
	entries  []Entry
	// published is how many entries the pages following have been sent.
	published int
	mark      int64 // journal bytes read into entries
	graph     *viz.Graph
	version   int // the graph's marks changed: a new diagram
	busy      string
	since     time.Time
	calls     []*inflight
	cancel    context.CancelFunc
	stopping  bool // a cancel was asked for
	pending   map[string]any
	subs      map[*subscriber]struct{}
	used      time.Time
	turns     sync.WaitGroup

	svgMu sync.Mutex
	svg   []byte
	svgV  int
}

// inflight is a call the turn in flight dispatched.
type inflight struct {
	Call
	start time.Time
}

// subscriber is a page following a live session: frames queued for it;
// dead closes when it fell behind and must reconnect.
type subscriber struct {
	ch   chan []byte
	dead chan struct{}
}

func newLive(srv *Server, id string, si *storyInfo) *live {
	return &live{srv: srv, id: id, story: si, gen: NewToken()[:8], subs: map[*subscriber]struct{}{}, used: time.Now(), mask: secret.New()}
}

// onDispatch is told of each call the session dispatches: it is shown
// live.
func (l *live) onDispatch(hc *host.Call) func() {
	in := &inflight{Call: callOf(hc), start: time.Now()}
	l.mu.Lock()
	l.calls = append(l.calls, in)
	l.publish(l.callsFrame())
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		for i, x := range l.calls {
			if x == in {
				l.calls = append(l.calls[:i], l.calls[i+1:]...)
				break
			}
		}
		l.publish(l.callsFrame())
		l.mu.Unlock()
	}
}

// begin runs fn (creating or opening the session) as the live session's
// first piece of work, the page told it is busy meanwhile.
func (l *live) begin(what string, fn func(ctx context.Context) (*driver.Open, error)) {
	ctx, cancel := context.WithCancel(l.srv.ctx)
	l.mu.Lock()
	l.busy, l.since, l.cancel = what, time.Now(), cancel
	l.mu.Unlock()
	l.turns.Add(1)
	go func() {
		defer l.turns.Done()
		defer cancel()
		sess, err := fn(ctx)
		if err == nil {
			l.attach(ctx, sess)
			return
		}
		if errors.Is(err, driver.ErrFinished) {
			if err = l.inspect(ctx); err == nil {
				return
			}
		}
		l.fail(err)
	}()
}

// attach makes sess the live session's: its transcript and path are
// read from its journal.
func (l *live) attach(ctx context.Context, sess *driver.Open) {
	st, err := sess.Status(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sess, l.meta = sess, sess.Meta()
	l.mask = secret.New(sess.Story().Secrets)
	l.busy, l.cancel, l.stopping = "", nil, false
	if err != nil {
		l.addNotice("status: " + err.Error())
	}
	l.last = st
	l.catchUp()
	l.publishAll()
}

// inspect shows a finished session as its journal left it.
func (l *live) inspect(ctx context.Context) error {
	m, st, err := l.srv.cfg.Sessions.Status(ctx, l.id)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.meta, l.last = m, st
	l.readOnly = fmt.Sprintf("this session finished (state %s, turn %d): fork it to go on", st.State, st.Turn)
	l.busy, l.cancel, l.stopping = "", nil, false
	l.catchUp()
	l.publishAll()
	return nil
}

// fail records why the session could not be opened; the server forgets
// it, so a page that reloads tries again.
func (l *live) fail(err error) {
	l.mu.Lock()
	l.failed = err.Error()
	l.busy, l.cancel, l.stopping = "", nil, false
	l.publishAll()
	l.mu.Unlock()
	l.srv.forget(l)
}

// take starts a turn with one input; it refuses while another runs.
func (l *live) take(in driver.Input) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(l.srv.ctx)
	l.busy, l.since, l.cancel, l.stopping = busyTurn, time.Now(), cancel, false
	l.used = time.Now()
	l.publish(l.callsFrame())
	sess := l.sess
	l.turns.Add(1)
	go func() {
		defer l.turns.Done()
		defer cancel()
		_, err := sess.Take(ctx, in)
		st, serr := sess.Status(ctx)
		l.turnDone(ctx, err, st, serr)
	}()
	return nil
}

// ready says why no input can be taken now (nil: it can).
func (l *live) ready() error {
	switch {
	case l.failed != "":
		return &conflictError{l.failed}
	case l.readOnly != "":
		return &conflictError{l.readOnly}
	case l.busy == busyStarting || l.busy == busyOpening:
		return &conflictError{"the session is " + l.busy + ": wait for its status on the event stream, then send"}
	case l.busy != "":
		return &conflictError{"a turn is in progress: wait for it, or cancel it"}
	case l.sess == nil:
		return &conflictError{"the session is not open"}
	}
	return nil
}

// conflictError is a request the session's state refuses (409).
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

// turnDone publishes what a turn did: the journal's new entries, the
// status, the calls (none now).
func (l *live) turnDone(ctx context.Context, err error, st *driver.Status, serr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ie *driver.InputError
	switch {
	case err == nil:
	case errors.As(err, &ie):
		l.addNotice("not taken: " + ie.Err.Error())
	case ctx.Err() != nil:
		l.addNotice("cancelled: " + err.Error())
	default:
		l.addNotice("the turn could not run: " + err.Error())
	}
	if serr != nil {
		l.addNotice("status: " + serr.Error())
	} else {
		l.last = st
	}
	if l.stopping && err == nil {
		l.addNotice("cancel asked for; the turn ended first")
	}
	l.busy, l.cancel, l.stopping, l.calls = "", nil, false, nil
	l.pending = nil // a turn applies the world edits
	l.meta = l.sess.Meta()
	l.catchUp()
	if h := l.srv.cfg.TurnDone; h != nil {
		h(l.id)
	}
	l.publishAll()
}

// stop cancels the turn in flight.
func (l *live) stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel == nil {
		return &conflictError{"nothing is running"}
	}
	l.stopping = true
	l.cancel()
	l.publish(l.callsFrame())
	return nil
}

// catchUp reads the journal written since the last read into entries,
// marks the path on the graph and the current state.
func (l *live) catchUp() {
	if l.graph == nil {
		l.graph = l.srv.graphOf(l.story)
	}
	b, err := readFrom(l.meta.Trace, l.mark)
	if err != nil {
		l.addNotice("reading the journal: " + err.Error())
	}
	if len(b) > 0 {
		l.mark += int64(len(b))
		evs := decodeLines(b) // once, for the transcript and the path
		l.entries = append(l.entries, entriesOf(evs)...)
		if l.graph != nil {
			l.graph.Highlight(evs)
		}
	}
	if l.graph != nil && l.last != nil {
		l.graph.SetCurrent(l.last.State)
	}
	l.version++
}

// readFrom reads path's whole lines from offset off on.
func readFrom(path string, off int64) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return b[:i+1], nil
		}
	}
	return nil, nil
}

// decodeLines decodes the events of whole JSONL lines (the header and
// lines that do not decode are skipped).
func decodeLines(b []byte) []trace.Event {
	var evs []trace.Event
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if ev, err := trace.DecodeLine(b[:i]); err == nil && ev.Kind != trace.KindSessionHeader {
			evs = append(evs, ev)
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return evs
}

func (l *live) addNotice(text string) {
	var turn int64
	if l.last != nil {
		turn = l.last.Turn
	}
	l.entries = append(l.entries, Entry{Turn: turn, Kind: EntryNotice, Text: l.mask.Text(text)})
}

// setWorld queues world edits for the next turn (debug mode).
func (l *live) setWorld(kv map[string]any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(); err != nil {
		return err
	}
	next := map[string]any{}
	for k, v := range l.pending {
		next[k] = v
	}
	for k, v := range kv {
		next[k] = v
	}
	if err := l.sess.OverrideWorld(next); err != nil {
		return err
	}
	l.pending = next
	l.publish(l.statusFrame())
	return nil
}

// subscribe adds a page. The frames it is sent first bring it up to
// date: the entries after lastID (every entry when lastID is of another
// copy of the transcript), the status, the calls.
func (l *live) subscribe(lastID string) (*subscriber, []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &subscriber{ch: make(chan []byte, 64), dead: make(chan struct{})}
	l.subs[s] = struct{}{}
	l.used = time.Now()
	from := 0
	if gen, n, ok := parseEventID(lastID); ok && gen == l.gen && n <= len(l.entries) {
		from = n
	}
	var out []byte
	out = append(out, l.entriesFrame(from, from == 0)...)
	out = append(out, l.statusFrame()...)
	out = append(out, l.callsFrame()...)
	return s, out
}

func (l *live) unsubscribe(s *subscriber) {
	l.mu.Lock()
	delete(l.subs, s)
	l.used = time.Now()
	l.mu.Unlock()
}

// publish queues frame for every page; a page whose queue is full is
// dropped (its page reconnects and catches up from the last entry it
// has). Called with mu held.
func (l *live) publish(frame []byte) {
	for s := range l.subs {
		select {
		case s.ch <- frame:
		default:
			delete(l.subs, s)
			close(s.dead)
		}
	}
}

// publishAll sends the new entries, the status and the calls as one
// frame. Called with mu held.
func (l *live) publishAll() {
	var f []byte
	f = append(f, l.entriesFrame(l.sent(), false)...)
	f = append(f, l.statusFrame()...)
	f = append(f, l.callsFrame()...)
	l.publish(f)
}

// sent is how many entries the pages have: every entry but those added
// since the last publishAll (entries are only added under mu, and each
// addition is published before mu is let go).
func (l *live) sent() int {
	n := l.published
	l.published = len(l.entries)
	return n
}

// idle reports whether the live session can be closed: no page follows
// it and nothing runs.
func (l *live) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs) == 0 && l.busy == ""
}

// now writes where the live session stands into its home page row.
func (l *live) now(row *sessionRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	row.Live = true
	if st := l.last; st != nil {
		row.State, row.Turn, row.Finished, row.Exit = st.State, st.Turn, st.Done, st.Exit
	}
}

// running reports whether a turn runs (or the session is being opened).
func (l *live) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy != ""
}

// close cancels what runs, waits for it and closes the session.
func (l *live) close() error {
	l.mu.Lock()
	if l.cancel != nil {
		l.cancel()
	}
	l.mu.Unlock()
	l.turns.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs {
		delete(l.subs, s)
		close(s.dead)
	}
	if l.sess == nil {
		return nil
	}
	err := l.sess.Close()
	l.sess = nil
	return err
}
