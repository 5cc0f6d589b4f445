package traceview

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// FollowOptions drive Follow.
type FollowOptions struct {
	Report ReportOptions
	// Tick paces the polls (a time.Ticker's channel; a test's own).
	Tick <-chan time.Time
	// Writing says whether a writer still holds the trace open; nil is
	// WriterActive (the trace writer's advisory lock).
	Writing func(path string) bool
}

// Follow prints a trace as it grows: the header, then each turn once it
// has ended (or a later turn began), polling at every tick. It ends, after
// the last turn and the totals, when no writer holds the trace any more
// (the run closed it), or quietly when ctx ends (Ctrl-C). A file that does
// not exist yet is waited for.
func Follow(ctx context.Context, w io.Writer, path string, o FollowOptions) error {
	writing := o.Writing
	if writing == nil {
		writing = trace.WriterActive
	}
	ew := &errWriter{w: w}
	printed, header := 0, false
	for {
		active := writing(path)
		r, err := Load(path)
		switch {
		case err == nil:
			if !header {
				WriteHeader(ew, r, o.Report)
				header = true
			}
			done := len(r.Turns)
			if active && done > 0 && r.Turns[done-1].End == nil {
				done-- // the last turn is still going
			}
			for ; printed < done; printed++ {
				WriteTurn(ew, r.Turns[printed], o.Report)
			}
			if !active {
				WriteTotals(ew, r, o.Report)
				return ew.err
			}
		case errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "the trace is empty"):
			// not written yet
		default:
			return err
		}
		if ew.err != nil {
			return ew.err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.Tick:
		}
	}
}

// SessionTrace resolves a FILE|SESSION argument: an existing file is
// itself; otherwise a session id, or the unique session id it begins, of
// a trace under dir (kitsoki run's sessions directory).
func SessionTrace(arg, dir string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	}
	if strings.ContainsRune(arg, filepath.Separator) || strings.HasSuffix(arg, ".jsonl") {
		return "", &NotFoundError{Arg: arg, Dir: dir}
	}
	ents, _ := os.ReadDir(dir)
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() && strings.HasPrefix(id, arg) {
			if id == arg {
				return filepath.Join(dir, e.Name()), nil
			}
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	switch len(ids) {
	case 0:
		return "", &NotFoundError{Arg: arg, Dir: dir}
	case 1:
		return filepath.Join(dir, ids[0]+".jsonl"), nil
	}
	return "", &NotFoundError{Arg: arg, Dir: dir, Ambiguous: ids}
}

// NotFoundError is a FILE|SESSION argument that names neither.
type NotFoundError struct {
	Arg, Dir  string
	Ambiguous []string
}

func (e *NotFoundError) Error() string {
	if len(e.Ambiguous) > 0 {
		return e.Arg + ": more than one session begins so: " + strings.Join(e.Ambiguous, ", ") + " (give more of the id)"
	}
	return e.Arg + ": no such trace file, and no session of that id in " + e.Dir + " (kitsoki run writes " + filepath.Join(e.Dir, "<session>.jsonl") + ")"
}
