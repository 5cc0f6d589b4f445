package trace

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// identityCheckInterval bounds how long a single long turn can go on writing
// into a file that was replaced under us before Append notices.
const identityCheckInterval = time.Second

// Writer is the file Sink: one trace file, appended to by one process.
//
// Each line is written whole with a single write(2) on an O_APPEND
// descriptor as soon as Append is called, so a killed process leaves only
// whole lines behind. fsync runs at EndTurn and Close (group commit), or
// after every line with WithSyncPerEvent. An exclusive flock keeps other
// writers out. Whether the path still names the opened file is checked
// before the first line of every turn, at EndTurn, and at most once a second
// during a long turn; see docs/tracing/trace-format.md for why not per line.
//
// A Writer is safe for concurrent use.
type Writer struct {
	mu           sync.Mutex
	path         string
	f            *os.File
	ident        os.FileInfo // the file as opened, for os.SameFile
	clk          clock.Clock
	log          *slog.Logger
	syncPerEvent bool
	noSync       bool
	syncHook     func()
	header       HeaderInfo
	coalesce     bool   // WithCoalesce
	pend         []byte // a coalescing writer's lines not yet written
	enc          *lineEncoder
	size         int64     // bytes of whole lines in the file
	dirty        bool      // written since the last fsync
	lastCheck    time.Time // clock reading at the last identity check
	err          error     // sticky failure: every later call returns it
	closed       bool
	sidecars     *sidecarStore // transcripts/ beside the file
}

var _ Sink = (*Writer)(nil)

// Create opens the trace at path for appending, creating it and its parent
// directories if needed. A new or empty file gets the session.header line.
// An existing non-empty file is read and checked first (every read rule),
// and the writer resumes after its last event: seq continues densely and
// the next turn may not be lower than the last one in the file.
//
// The file is created with mode 0600: traces hold prompts and responses.
func Create(path string, opts ...Option) (*Writer, error) {
	cfg := newConfig(opts)
	if dir := filepath.Dir(path); dir != "" {
		if err := outfile.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("trace: %w", err) // names the directory
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, outfile.File)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err) // names the path
	}
	w, err := open(path, f, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func open(path string, f *os.File, cfg config) (*Writer, error) {
	if err := lockFile(f); err != nil {
		return nil, fmt.Errorf("trace: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trace: open %s: %w", path, err)
	}
	w := &Writer{
		path:         path,
		f:            f,
		ident:        fi,
		clk:          cfg.clock,
		log:          cfg.logger,
		syncPerEvent: cfg.syncPerEvent && !cfg.noSync,
		noSync:       cfg.noSync,
		coalesce:     cfg.coalesce && !cfg.syncPerEvent,
		syncHook:     cfg.syncHook,
		header:       cfg.header,
		enc:          newLineEncoder(secret.New(cfg.secrets)),
		size:         fi.Size(),
		sidecars:     fileSidecars(path, secret.New(cfg.secrets)),
	}
	now := w.clk.Now()
	w.lastCheck = now
	if w.size == 0 {
		if err := w.writeHeader(now); err != nil {
			return nil, err
		}
		w.log.Debug("trace created", "path", path)
		return w, nil
	}
	var pos position
	if cfg.tailCheck {
		pos, err = tailPosition(f, w.size)
	} else {
		pos, err = scanPosition(io.NewSectionReader(f, 0, w.size))
	}
	if err != nil {
		hint := ""
		var fe *FormatError
		if errors.As(err, &fe) && fe.Msg == msgMissingNewline {
			hint = " (the last line is incomplete, most likely cut by a crash during a write;" +
				" delete the bytes after the last newline to resume this trace)"
		}
		return nil, fmt.Errorf("trace: cannot append to %s: %w%s", path, err, hint)
	}
	if pos.any {
		w.enc.seq.commit(pos.turn, pos.seq)
	}
	w.log.Info("trace resumed", "path", path, "bytes", w.size, "last_turn", pos.turn, "has_events", pos.any)
	return w, nil
}

// writeHeader writes line 1 and makes it and the new directory entry
// durable, so a crash right after Create still leaves a readable trace.
func (w *Writer) writeHeader(now time.Time) error {
	line := headerLine(now, w.header)
	n, err := w.f.Write(line)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("trace: write header to %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("trace: sync %s: %w", w.path, err)
	}
	w.synced()
	syncDir(filepath.Dir(w.path))
	return nil
}

// syncDir fsyncs a directory so a new entry in it survives a crash. Some
// file systems refuse fsync on directories; the file itself is already
// synced, so failure here is not an error.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// WriteTranscript writes a call's agent-action transcript to
// transcripts/<call_id>.jsonl (and .timings) in the trace file's
// directory, secrets masked; see TranscriptSink.
func (w *Writer) WriteTranscript(callID string, t *Transcript) (*TranscriptRef, error) {
	return w.sidecars.write(callID, t)
}

// Path is the trace file's path.
func (w *Writer) Path() string { return w.path }

// Now reads the writer's clock.
func (w *Writer) Now() time.Time { return w.clk.Now() }

// LastTurn reports the turn of the last event in the trace (including events
// found on resume); ok is false while the trace has no events.
func (w *Writer) LastTurn() (turn int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.seq.turn, w.enc.seq.started
}

// NextSeq returns the seq the next Append for turn will assign; see Sink.
func (w *Writer) NextSeq(turn int64) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.seq.peek(turn)
}

// Append writes one event; see Sink. A rejected event leaves the file
// untouched. After a failed fsync, a detected replacement, or a failed write
// whose partial line could not be cut off again, the writer is broken and
// every later call returns the same error. With WithSyncPerEvent, an fsync
// failure is reported after the line was written (ev.Seq is then set).
func (w *Writer) Append(ev *Event) error { return w.append(ev, nil) }

// AppendPayload writes one event with a typed payload; see Sink.
func (w *Writer) AppendPayload(ev *Event, p Payload) error {
	if p == nil {
		return errNilPayload
	}
	return w.append(ev, p)
}

func (w *Writer) append(ev *Event, typed Payload) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	now := w.clk.Now()
	line, p, err := w.enc.encode(ev, typed, now)
	if err != nil {
		return err
	}
	// A coalescing writer checked the file at the previous EndTurn, just
	// before this turn's first line; the one-second bound still applies.
	if (p.newTurn && !w.coalesce) || now.Sub(w.lastCheck) >= identityCheckInterval || now.Before(w.lastCheck) {
		if err := w.checkIdentity(now); err != nil {
			return err
		}
	}
	if w.coalesce {
		kind := ev.Kind
		if typed != nil {
			kind = typed.Kind()
		}
		w.pend = append(w.pend, line...)
		w.enc.commit(ev, p)
		if flushesAt(kind) {
			return w.flush()
		}
		return nil
	}
	n, err := w.f.Write(line)
	if err != nil {
		return w.writeFailed(n, err)
	}
	w.size += int64(n)
	w.dirty = true
	w.enc.commit(ev, p)
	if w.syncPerEvent {
		return w.sync()
	}
	return nil
}

// flushesAt reports whether a coalescing writer hands its lines to the
// kernel after an event of kind: right before a call goes out
// (harness.dispatched) and once its answer is bound (harness.returned,
// which carries the answer and is what a resume counts as the call's end),
// so a killed process never loses a call's record, and its answer only in
// the moment between the agent's reply and the bind.
func flushesAt(kind string) bool {
	switch kind {
	case KindHarnessDispatched, KindHarnessReturned:
		return true
	}
	return false
}

// flush writes the pending lines of a coalescing writer in one write(2).
// A failure breaks the writer: the lines' seqs are already taken.
func (w *Writer) flush() error {
	if len(w.pend) == 0 {
		return nil
	}
	n, err := w.f.Write(w.pend)
	if err != nil {
		err = w.writeFailed(n, err)
		if w.err == nil {
			w.err = err
		}
		return w.err
	}
	w.size += int64(n)
	w.dirty = true
	w.pend = w.pend[:0]
	return nil
}

// writeFailed handles a failed write(2). A short write would leave a torn
// line, so the file is cut back to its last whole line; if even that fails
// the writer stops for good.
func (w *Writer) writeFailed(n int, err error) error {
	err = fmt.Errorf("trace: write %s: %w", w.path, err)
	if n > 0 {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.err = errors.Join(err, fmt.Errorf("trace: cannot remove torn line from %s: %w", w.path, terr))
			w.log.Error("trace broken", "path", w.path, "err", w.err)
			return w.err
		}
	}
	w.log.Warn("trace write failed", "path", w.path, "err", err)
	return err
}

// EndTurn marks the end of a turn: the turn's lines are fsynced (unless they
// already were, line by line) and the file's identity is checked.
func (w *Writer) EndTurn() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.sync(); err != nil {
		return err
	}
	return w.checkIdentity(w.clk.Now())
}

// Close fsyncs, releases the lock and closes the file. Closing twice is a
// no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var syncErr error
	if w.err == nil {
		syncErr = w.flush()
	}
	if w.dirty && !w.noSync {
		if err := w.f.Sync(); err != nil {
			syncErr = fmt.Errorf("trace: sync %s: %w", w.path, err)
		}
		w.synced()
	}
	if err := w.f.Close(); err != nil {
		return errors.Join(syncErr, fmt.Errorf("trace: close %s: %w", w.path, err))
	}
	return syncErr
}

func (w *Writer) usable() error {
	if w.closed {
		return fmt.Errorf("trace: %s: %w", w.path, ErrClosed)
	}
	return w.err
}

func (w *Writer) sync() error {
	if !w.dirty || w.noSync {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("trace: sync %s: %w", w.path, err)
		w.log.Error("trace broken", "path", w.path, "err", w.err)
		return w.err
	}
	w.synced()
	w.dirty = false
	return nil
}

// synced tells the test hook about an fsync of the file.
func (w *Writer) synced() {
	if w.syncHook != nil {
		w.syncHook()
	}
}

// Size is the number of bytes of whole lines in the file: where the next
// line will start.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size + int64(len(w.pend))
}

// checkIdentity fails, for good, when the path no longer names the file we
// opened (renamed, deleted or replaced).
func (w *Writer) checkIdentity(now time.Time) error {
	w.lastCheck = now
	fi, err := os.Stat(w.path)
	if err == nil && os.SameFile(w.ident, fi) {
		return nil
	}
	w.err = fmt.Errorf("trace: %s: %w", w.path, ErrReplaced)
	w.log.Error("trace broken", "path", w.path, "err", w.err)
	return w.err
}

// RepairTail cuts a torn last line (the bytes after the last newline, left
// by a crash in the middle of a write) off the trace at path, under the
// writer's lock, and reports how many bytes it cut (0 when the file ends
// in a newline). A file another writer holds is refused: its last line may
// be on its way. Resuming a durable session does this: the cut line is an
// event that was never completely written, as if the crash had come just
// before it.
func RepairTail(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return 0, fmt.Errorf("trace: repair %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("trace: repair %s: %w", path, err)
	}
	size := fi.Size()
	keep := size
	buf := make([]byte, 0, 8192)
	for keep > 0 {
		n := min(int64(cap(buf)), keep)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, keep-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("trace: repair %s: %w", path, err)
		}
		if i := lastNewline(buf); i >= 0 {
			keep = keep - n + int64(i) + 1
			break
		}
		keep -= n
	}
	if keep == size {
		return 0, nil
	}
	if err := f.Truncate(keep); err != nil {
		return 0, fmt.Errorf("trace: repair %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("trace: repair %s: %w", path, err)
	}
	return size - keep, nil
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// CheckUnlocked fails when a writer holds the trace at path (a run is
// writing it); a missing file is not an error.
func CheckUnlocked(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	return lockFile(f)
}
