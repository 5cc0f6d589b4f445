package session

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/filelock"
	"github.com/kitsoki/kitsoki/internal/base/outfile"
)

// The sessions index is one file, index.tsv, that List reads instead of
// every session's entry: a tab-separated log (encoding/csv) with one row
// per Put and a tombstone row per Delete, the last row of an id winning.
// Rows are appended under index.lock; a List that finds more than twice
// as many rows as sessions rewrites the file with one row each. A store
// written before the index existed gets it built from its entries on the
// first List.
const (
	indexFile     = "index.tsv"
	indexLockFile = "index.lock"
	// indexHeader is the index's first line: its format and version.
	indexHeader = "#kitsoki-sessions-index\t1\n"
	// compactSlack is how many dead rows the index may hold beside its
	// live ones before a List compacts it.
	compactSlack = 1024
)

// The columns of an index row, in order.
const (
	colID = iota
	colKey
	colAppID
	colStory
	colTrace // "" when it is the store's default path
	colState
	colTurn
	colCreated // unix nanoseconds
	colUpdated
	colFinished // 1 or 0
	colExit
	colCost
	colForkedFrom
	colForkedAt
	colDeleted // 1 on a tombstone
	nCols
)

type index struct {
	s    Store
	path string
	lock string
}

func (s Store) index() index {
	return index{s: s, path: filepath.Join(s.Dir, indexFile), lock: filepath.Join(s.Dir, indexLockFile)}
}

// indexRow is m as an index row, with no trace (the default path).
func indexRow(m Meta) []string {
	r := make([]string, nCols)
	r[colID], r[colKey], r[colAppID], r[colStory] = m.ID, m.Key, m.AppID, m.Story
	r[colState], r[colExit], r[colForkedFrom] = m.State, m.Exit, m.ForkedFrom
	r[colTurn] = strconv.FormatInt(m.Turn, 10)
	r[colCreated] = unixNano(m.Created)
	r[colUpdated] = unixNano(m.Updated)
	r[colFinished] = boolCol(m.Finished)
	r[colCost] = strconv.FormatFloat(m.CostUSD, 'g', -1, 64)
	r[colForkedAt] = strconv.FormatInt(m.ForkedAt, 10)
	r[colDeleted] = "0"
	return r
}

func tombstone(id string) []string {
	r := make([]string, nCols)
	r[colID], r[colDeleted] = id, "1"
	return r
}

func unixNano(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func boolCol(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// meta reads a row back; ok is false for a row that is not one (a line a
// crash cut short). Ids were checked when their rows were written.
func (x index) meta(r []string, tracePrefix string) (Meta, bool) {
	if len(r) != nCols || r[colID] == "" {
		return Meta{}, false
	}
	m := Meta{ID: r[colID], Key: r[colKey], AppID: r[colAppID], Story: r[colStory], Trace: r[colTrace],
		State: r[colState], Exit: r[colExit], ForkedFrom: r[colForkedFrom], Finished: r[colFinished] == "1"}
	var errs [5]error
	m.Turn, errs[0] = strconv.ParseInt(r[colTurn], 10, 64)
	m.ForkedAt, errs[1] = strconv.ParseInt(r[colForkedAt], 10, 64)
	m.CostUSD, errs[2] = strconv.ParseFloat(r[colCost], 64)
	var c, u int64
	c, errs[3] = strconv.ParseInt(r[colCreated], 10, 64)
	u, errs[4] = strconv.ParseInt(r[colUpdated], 10, 64)
	if errors.Join(errs[:]...) != nil {
		return Meta{}, false
	}
	m.Created, m.Updated = fromUnixNano(c), fromUnixNano(u)
	if m.Trace == "" {
		m.Trace = tracePrefix + m.ID + ".jsonl" // TracePath, without Join's cleaning of a clean name
	}
	return m, true
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// append writes rows at the end of the index, creating it (with its
// header) when it is missing.
func (x index) append(rows ...[]string) error {
	if err := outfile.MkdirAll(x.s.Dir); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	l, err := filelock.Wait(x.lock)
	if err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	defer l.Release()
	if _, err := os.Stat(x.path); errors.Is(err, fs.ErrNotExist) {
		// The first row of a store: build the index from the entries
		// already there, this one included.
		return x.rebuild()
	}
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	werr := x.write(f, rows)
	return errors.Join(werr, f.Close())
}

// write encodes rows for the index.
func (x index) write(w io.Writer, rows [][]string) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Comma = '\t'
	for _, r := range rows {
		if err := cw.Write(r); err != nil {
			return fmt.Errorf("sessions index: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	return nil
}

// read returns the index's live entries, in the order their last rows
// were written, and how many rows it holds; found is false when there is
// no index (or one of another version).
func (x index) read() (live []Meta, rows int, found bool, err error) {
	b, err := os.ReadFile(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("sessions index: %w", err)
	}
	if !bytes.HasPrefix(b, []byte(indexHeader)) {
		return nil, 0, false, nil
	}
	cr := csv.NewReader(bytes.NewReader(b[len(indexHeader):]))
	cr.Comma, cr.FieldsPerRecord, cr.ReuseRecord = '\t', -1, true
	prefix := strings.TrimSuffix(x.s.TracePath("x"), "x.jsonl")
	all := make([]Meta, 0, bytes.Count(b, []byte{'\n'}))
	last := map[string]int{} // id → its last row in all; -1 after a tombstone
	for {
		r, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			continue // a line a crash cut short: the rows after it still count
		}
		rows++
		if len(r) == nCols && r[colDeleted] == "1" {
			last[r[colID]] = -1
			continue
		}
		if m, ok := x.meta(r, prefix); ok {
			last[m.ID] = len(all)
			all = append(all, m)
		}
	}
	n := 0
	for _, i := range last {
		if i >= 0 {
			n++
		}
	}
	if n == len(all) { // one row per session, none deleted
		return all, rows, true, nil
	}
	live = make([]Meta, 0, n)
	for i := range all {
		if last[all[i].ID] == i {
			live = append(live, all[i])
		}
	}
	return live, rows, true, nil
}

// rebuild writes the index from the sessions' entries (<id>.json); the
// caller holds the index lock.
func (x index) rebuild() error {
	ents, err := os.ReadDir(x.s.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sessions: %w", err)
	}
	var rows [][]string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		m, err := x.s.Get(strings.TrimSuffix(name, ".json"))
		if err != nil {
			continue // a stray file: not a session
		}
		rows = append(rows, x.row(m))
	}
	return x.replace(rows)
}

// row is m's index row, its trace left out when it is the default.
func (x index) row(m Meta) []string {
	r := indexRow(m)
	if m.Trace != x.s.TracePath(m.ID) {
		r[colTrace] = m.Trace
	}
	return r
}

// replace writes the index anew with rows (atomically: a temporary file
// renamed over the old one); the caller holds the index lock.
func (x index) replace(rows [][]string) error {
	if err := outfile.MkdirAll(x.s.Dir); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	tmp, err := os.CreateTemp(x.s.Dir, ".index.*.tmp")
	if err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	w := bufio.NewWriter(tmp)
	_, herr := w.WriteString(indexHeader)
	werr := x.write(w, rows)
	ferr := w.Flush()
	cerr := tmp.Close()
	if err := errors.Join(herr, werr, ferr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sessions index: %w", err)
	}
	if err := os.Rename(tmp.Name(), x.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sessions index: %w", err)
	}
	return nil
}

// List returns every session in the directory, most recent activity
// first, as the index has them: each entry as its last Put wrote it (a
// run writes it at every turn's end; Get brings one up to date from its
// journal). Its cost grows with the number of sessions, not with their
// journals.
func (s Store) List() ([]Meta, error) {
	x := s.index()
	live, rows, found, err := x.read()
	if err != nil {
		return nil, err
	}
	if !found {
		if _, err := os.Stat(s.Dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err := x.locked(x.rebuild); err != nil {
			return nil, err
		}
		if live, _, _, err = x.read(); err != nil {
			return nil, err
		}
	} else if rows > 2*len(live)+compactSlack {
		x.compact()
	}
	// Rows are written as sessions go on, so the order of the last rows is
	// nearly the order of activity: sort positions, not the entries.
	order := make([]int, len(live))
	for i := range order {
		order[i] = len(live) - 1 - i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := live[b].Updated.Compare(live[a].Updated); c != 0 {
			return c
		}
		return strings.Compare(live[a].ID, live[b].ID)
	})
	out := make([]Meta, len(live))
	for i, j := range order {
		out[i] = live[j]
	}
	return out, nil
}

func (x index) locked(fn func() error) error {
	l, err := filelock.Wait(x.lock)
	if err != nil {
		return fmt.Errorf("sessions index: %w", err)
	}
	defer l.Release()
	return fn()
}

// compact rewrites the index with one row per live session. It is done
// only when the lock is free at once: a List never waits for it, and a
// row appended meanwhile is not lost (the rewrite reads the file again
// under the lock).
func (x index) compact() {
	l, err := filelock.Acquire(x.lock)
	if err != nil {
		return
	}
	defer l.Release()
	live, _, found, err := x.read()
	if err != nil || !found {
		return
	}
	rows := make([][]string, 0, len(live))
	for _, m := range live {
		rows = append(rows, x.row(m))
	}
	_ = x.replace(rows) // a failed compaction leaves the old index, which still reads
}
