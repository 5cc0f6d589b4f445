package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// EnvDir names the environment variable that overrides the sessions
// directory (below --sessions-dir).
const EnvDir = "KITSOKI_SESSIONS_DIR"

// DefaultDir is the sessions directory under a workspace root.
func DefaultDir(workspaceRoot string) string {
	return filepath.Join(workspaceRoot, ".kitsoki", "sessions")
}

// Store is a sessions directory: <id>.jsonl is a session's journal (its
// trace) and <id>.json its index entry (Meta).
type Store struct{ Dir string }

// Meta is a session's index entry: what kitsoki session list shows without
// reading the journal. It is written when the session starts and when its
// run ends; an entry whose journal has grown since (TraceBytes differs:
// the run is going on, or was killed) is brought up to date from the
// journal's tail when listed.
type Meta struct {
	ID         string    `json:"id"`
	AppID      string    `json:"app_id,omitempty"`
	Story      string    `json:"story"` // absolute path of the story's root file
	StoryHash  string    `json:"story_hash,omitempty"`
	Version    string    `json:"kitsoki_version,omitempty"`
	Trace      string    `json:"trace"` // the journal's path
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"` // last activity
	State      string    `json:"state"`
	Turn       int64     `json:"turn"`
	Finished   bool      `json:"finished"`
	Exit       string    `json:"exit,omitempty"`
	CostUSD    float64   `json:"cost_usd"`
	LastError  string    `json:"last_error,omitempty"`
	ForkedFrom string    `json:"forked_from,omitempty"`
	ForkedAt   int64     `json:"forked_at_turn,omitempty"`
	TraceBytes int64     `json:"trace_bytes"`
	// Key is the outside key the session was created under
	// (transport:thread), "" for a session known by its id only.
	Key string `json:"key,omitempty"`
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckID refuses an id that could not be a file name in the directory.
func CheckID(id string) error {
	if !idRE.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("session id %q: use letters, digits, '.', '_' and '-' (at most 128, not starting with a punctuation mark)", id)
	}
	return nil
}

// TracePath is where a session's journal lives by default.
func (s Store) TracePath(id string) string { return filepath.Join(s.Dir, id+".jsonl") }

func (s Store) metaPath(id string) string { return filepath.Join(s.Dir, id+".json") }

// ErrNotFound is Get's error for an id the directory does not hold.
var ErrNotFound = errors.New("no such session")

// Put writes a session's index entry (atomically: a temporary file renamed
// over the old one).
func (s Store) Put(m Meta) error {
	if err := outfile.MkdirAll(s.Dir); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, "."+m.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sessions: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.metaPath(m.ID)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sessions: %w", err)
	}
	x := s.index()
	return x.append(x.row(m))
}

// Get returns a session's index entry, brought up to date from its
// journal when the journal has grown since the entry was written.
func (s Store) Get(id string) (Meta, error) {
	if err := CheckID(id); err != nil {
		return Meta{}, err
	}
	b, err := os.ReadFile(s.metaPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, fmt.Errorf("session %s: %w in %s", id, ErrNotFound, s.Dir)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("sessions: %w", err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("sessions: %s: %w", s.metaPath(id), err)
	}
	return s.refresh(m), nil
}

// OutsideError is an index entry naming a journal outside the sessions
// directory. An entry is a file anyone who can write the directory can
// edit, and a resume appends to the journal it names, so kitsoki reads
// and writes only the journals inside the directory, or one the command
// line names itself (--trace).
type OutsideError struct{ ID, Trace, Dir string }

func (e *OutsideError) Error() string {
	return fmt.Sprintf("session %s: its index entry names the journal %s, outside the sessions directory %s; kitsoki uses a journal outside it only when the command names it: resume with --trace %s (or move the journal into the directory)",
		e.ID, e.Trace, e.Dir, e.Trace)
}

// Journal is the journal of m that may be read or appended to: m.Trace
// when it lies inside the sessions directory (symlinks resolved), or when
// named (an absolute --trace the command line gave; "" for none) is that
// very file; else an *OutsideError.
func (s Store) Journal(m Meta, named string) (string, error) {
	if (named != "" && filepath.Clean(named) == filepath.Clean(m.Trace)) || s.holds(m.Trace) {
		return m.Trace, nil
	}
	return "", &OutsideError{ID: m.ID, Trace: m.Trace, Dir: s.Dir}
}

// holds reports whether path lies inside the sessions directory, its
// directories' symlinks resolved.
func (s Store) holds(path string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	parent := filepath.Dir(path)
	if p, err := filepath.EvalSymlinks(parent); err == nil {
		parent = p
	}
	rel, err := filepath.Rel(dir, filepath.Join(parent, filepath.Base(path)))
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	fi, err := os.Lstat(path)
	return err != nil || fi.Mode()&fs.ModeSymlink == 0 // the journal itself is no symlink
}

// Entry returns a session's index entry as written, not brought up to
// date from its journal (Get does that).
func (s Store) Entry(id string) (Meta, error) {
	if err := CheckID(id); err != nil {
		return Meta{}, err
	}
	b, err := os.ReadFile(s.metaPath(id))
	if err != nil {
		return Meta{}, fmt.Errorf("sessions: %w", err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("sessions: %s: %w", s.metaPath(id), err)
	}
	return m, nil
}

// refresh brings m up to date when its journal grew since it was written.
// A journal outside the directory is not read.
func (s Store) refresh(m Meta) Meta {
	if _, err := s.Journal(m, ""); err != nil {
		return m
	}
	fi, err := os.Stat(m.Trace)
	if err != nil || fi.Size() == m.TraceBytes {
		return m
	}
	j, err := Load(m.Trace)
	if err != nil {
		m.LastError = err.Error()
		return m
	}
	return j.Describe(m)
}

// Describe fills m's state fields from the journal.
func (j *Journal) Describe(m Meta) Meta {
	m.State, m.Turn, m.Finished, m.Exit = j.State, j.Turn, j.Done, j.Exit
	if j.Partial != nil {
		m.Turn = j.Partial.Turn
	}
	m.CostUSD, m.LastError = j.Cost(), j.LastError()
	if !j.LastTS.IsZero() {
		m.Updated = j.LastTS
	}
	m.TraceBytes = j.Size
	if j.StoryHash != "" {
		m.StoryHash = j.StoryHash
	}
	return m
}

// Latest returns the most recently active unfinished session of the story
// whose root file is storyFile; ok is false when there is none.
func (s Store) Latest(storyFile string) (Meta, bool, error) {
	all, err := s.List()
	if err != nil {
		return Meta{}, false, err
	}
	for _, m := range all {
		if m.Story == storyFile && !m.Finished {
			return m, true, nil
		}
	}
	return Meta{}, false, nil
}

// Delete removes a session: its journal, its index entry, its key and its
// lock file. A session a process holds (its writer lock, or its journal's)
// is refused. A journal outside the directory is left where it is: kept
// names it.
func (s Store) Delete(id string) (kept string, err error) {
	m, err := s.Get(id)
	if err != nil {
		return "", err
	}
	lock, err := s.Lock(id)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	if _, err := s.Journal(m, ""); err != nil {
		return m.Trace, s.remove(m)
	}
	if err := trace.CheckUnlocked(m.Trace); err != nil {
		return "", fmt.Errorf("session %s is running (its journal %s: %w); stop it first", id, m.Trace, err)
	}
	return "", s.remove(m)
}

// remove deletes what m names: its journal (when it lies inside the
// directory), its index entry, its key and its lock file. The caller
// holds its lock.
func (s Store) remove(m Meta) error {
	files := []string{s.metaPath(m.ID)}
	if _, err := s.Journal(m, ""); err == nil {
		files = append(files, m.Trace)
	}
	for _, p := range files {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sessions: %w", err)
		}
	}
	if m.Key != "" {
		if err := s.UnbindKey(m.Key, m.ID); err != nil {
			return err
		}
	}
	if err := s.index().append(tombstone(m.ID)); err != nil {
		return err
	}
	// The lock file goes last: its lock is still held, and a process
	// waiting on it finds the session gone.
	if err := os.Remove(s.lockPath(m.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}
