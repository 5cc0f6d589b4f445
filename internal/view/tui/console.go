package tui

import (
	"context"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// ConsoleDriver is the UI's Driver over the line front end
// (driver.Console): a turn and a `:` command print exactly what the line
// protocol prints (the view aside, which the UI renders from the typed
// view), so the UI, the plain prompt and a session on a cluster share one
// command set and one report. Point the console's Out and Err at Writer
// (wrapped as the caller masks them) before the UI starts.
type ConsoleDriver struct {
	Console *driver.Console
	buf     lineBuf
	// pending are the world edits made in the viewer since the last
	// turn: the next turn applies them (WorldOverrider).
	pending map[string]any
}

// WorldOverrider is a session driver whose world the viewer can edit
// (driver.Local): the keys are set when the next turn starts.
type WorldOverrider interface {
	OverrideWorld(kv map[string]any) error
}

// Writer is where the console prints what a turn shows (err: what the
// line protocol prints on stderr).
func (d *ConsoleDriver) Writer(err bool) io.Writer { return lineBufWriter{b: &d.buf, err: err} }

// Start enters the story (turn 0), or resumes the session.
func (d *ConsoleDriver) Start(ctx context.Context) Result {
	d.Console.ViewShown = false
	code, stop := d.Console.Begin(ctx)
	return d.result(ctx, code, stop)
}

// Do runs a line: a turn, or a `:` command the UI does not handle itself.
func (d *ConsoleDriver) Do(ctx context.Context, line string) Result {
	if !strings.HasPrefix(line, ":") {
		d.pending = nil // this turn applies them
	}
	code, stop, _ := d.Console.Line(ctx, line)
	res := d.result(ctx, code, stop)
	if d.Console.Reloading { // a reload ends this UI; the run starts again with a new one
		res.Done = true
	}
	return res
}

// World is the world, with the edits the next turn applies (the world
// viewer behind :world).
func (d *ConsoleDriver) World() map[string]any {
	st, err := d.Console.D.Status(context.Background())
	w := map[string]any{}
	if err == nil && st.World != nil {
		w = st.World
	}
	for k, v := range d.pending {
		w[k] = orchestrator.DeepCopy(v)
	}
	return w
}

// SetWorld sets a world key from the viewer. The value is checked as an
// initial value is, and written (and traced, as a world.update) at the
// start of the next turn, before its guards run: a session's world
// changes only inside a turn, so the journal replays the edit where it
// took effect.
func (d *ConsoleDriver) SetWorld(key string, value any) (string, error) {
	ov, ok := d.Console.D.(WorldOverrider)
	if !ok {
		return "", errors.New("this session's world cannot be edited here (a session on the cluster)")
	}
	next := maps.Clone(d.pending)
	if next == nil {
		next = map[string]any{}
	}
	next[key] = value
	if err := ov.OverrideWorld(next); err != nil {
		return "", err
	}
	d.pending = next
	return "world." + key + " is set when the next turn starts (before its guards run)", nil
}

// result: a terminal state ends the UI (exit 0); an I/O or trace failure
// ends it with exit 1; a rejection, fault or failed call is shown and the
// UI goes on, as at the line protocol's prompt.
func (d *ConsoleDriver) result(ctx context.Context, code int, stop bool) Result {
	res := Result{Lines: d.buf.take(), View: d.Console.ViewShown}
	switch {
	case stop && code == driver.ExitOK:
		res.Done = true
	case stop && code == driver.ExitFailure && ctx.Err() == nil:
		res.Fatal, res.Code = true, driver.ExitFailure
	}
	return res
}

// Status is where the story is now, for the live area: the visible
// intents in menu order, the room and its footer.
func (d *ConsoleDriver) Status() Status {
	st, err := d.Console.D.Status(context.Background())
	if err != nil {
		return Status{ViewErr: err}
	}
	r := st.Room
	out := Status{State: st.State, Description: st.Description, View: st.ViewDoc, ViewErr: st.ViewErr,
		Room: r.Name, Theme: r.Theme, Transcript: r.Transcript, Footer: r.Footer, FooterErr: r.FooterErr, Relevant: r.Relevant}
	byName := map[string]driver.IntentInfo{}
	for _, in := range st.Visible() {
		byName[in.Name] = in
	}
	for _, name := range menuOrder(r.Menu, st.Visible()) {
		in := byName[name]
		ti := Intent{Name: in.Name, Description: in.Hint()}
		for _, sl := range in.Slots {
			ti.Slots = append(ti.Slots, Slot{Name: sl.Name, Type: sl.Type, Required: sl.Required, Values: sl.Values})
		}
		out.Intents = append(out.Intents, ti)
	}
	return out
}

// menuOrder is the names of the visible intents in the menu's order; a
// driver that gives no menu keeps the sorted order.
func menuOrder(menu []string, visible []driver.IntentInfo) []string {
	shown := map[string]bool{}
	for _, in := range visible {
		shown[in.Name] = true
	}
	var out []string
	if menu == nil {
		for _, in := range visible {
			out = append(out, in.Name)
		}
		return out
	}
	for _, name := range menu {
		if shown[name] {
			out = append(out, name)
		}
	}
	return out
}

// lineBuf collects what a turn prints on its two streams, in order.
type lineBuf struct {
	mu    sync.Mutex
	lines []Line
	part  [2][]byte
}

type lineBufWriter struct {
	b   *lineBuf
	err bool
}

func (w lineBufWriter) Write(p []byte) (int, error) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	i := 0
	if w.err {
		i = 1
	}
	b.part[i] = append(b.part[i], p...)
	for {
		j := strings.IndexByte(string(b.part[i]), '\n')
		if j < 0 {
			break
		}
		b.lines = append(b.lines, Line{Err: w.err, Text: string(b.part[i][:j])})
		b.part[i] = b.part[i][j+1:]
	}
	return len(p), nil
}

// take returns the lines printed since the last take.
func (b *lineBuf) take() []Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.part {
		if len(p) > 0 {
			b.lines = append(b.lines, Line{Err: i == 1, Text: string(p)})
			b.part[i] = nil
		}
	}
	out := b.lines
	b.lines = nil
	return out
}
