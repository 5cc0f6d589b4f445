package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/filelock"
	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// A key names a session from outside: a transport and its thread
// ("jira:PLTFRM-12345", "slack:C024BE91L/1700000000.000100"), the id a
// bot already has for the conversation. One key names one session; the
// store keeps one small file per key (keys/<hash>.json), so finding a
// session by its key costs the same with ten sessions or ten thousand.

var keyRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,31}:[^\x00-\x1f\x7f]{1,256}$`)

// CheckKey refuses a key that is not transport:thread.
func CheckKey(key string) error {
	if !keyRE.MatchString(key) {
		return fmt.Errorf("session key %q: write transport:thread, e.g. jira:PLTFRM-12345 (the transport in lower case letters, digits, '_', '.', '-'; the thread up to 256 printable characters)", key)
	}
	return nil
}

// IsKey reports whether ref names a session by its key (ids never hold a
// colon).
func IsKey(ref string) bool { return strings.Contains(ref, ":") }

type keyEntry struct {
	Key string `json:"key"`
	ID  string `json:"id"`
}

func (s Store) keyPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.Dir, "keys", hex.EncodeToString(sum[:16])+".json")
}

// ErrKeyTaken is BindKey's error for a key that names a session already.
var ErrKeyTaken = errors.New("the key names a session already")

// BindKey records that key names the session id. A key that names a
// session already is refused (ErrKeyTaken, naming that session): of two
// creates with one key, one wins.
func (s Store) BindKey(key, id string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	p := s.keyPath(key)
	if err := outfile.MkdirAll(filepath.Dir(p)); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	b, err := json.Marshal(keyEntry{Key: key, ID: id})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if other, rerr := s.keyID(key); rerr == nil {
			return fmt.Errorf("session key %s: %w (session %s); continue it, or delete it first", key, ErrKeyTaken, other)
		}
		return fmt.Errorf("session key %s: %w", key, ErrKeyTaken)
	}
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(p)
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}

// keyID reads the session id a key names.
func (s Store) keyID(key string) (string, error) {
	b, err := os.ReadFile(s.keyPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("session key %s: %w in %s", key, ErrNotFound, s.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("sessions: %w", err)
	}
	var e keyEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Key != key {
		return "", fmt.Errorf("sessions: %s does not hold key %s", s.keyPath(key), key)
	}
	return e.ID, nil
}

// UnbindKey removes key when it still names id (a create that failed
// after binding it).
func (s Store) UnbindKey(key, id string) error {
	if got, err := s.keyID(key); err != nil || got != id {
		return nil
	}
	if err := os.Remove(s.keyPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}

// Find returns the session ref names: a key (transport:thread) or an id.
func (s Store) Find(ref string) (Meta, error) {
	if !IsKey(ref) {
		return s.Get(ref)
	}
	if err := CheckKey(ref); err != nil {
		return Meta{}, err
	}
	id, err := s.keyID(ref)
	if err != nil {
		return Meta{}, err
	}
	return s.Get(id)
}

// BusyError is a session another process holds: it is taking a turn (a
// `session continue`) or running it (`kitsoki run`). Nothing was done;
// try again when it is free.
type BusyError struct{ ID string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is busy: another process holds its writer lock (a turn in progress, or a kitsoki run of it); try again when it is done", e.ID)
}

// ErrBusy matches every *BusyError with errors.Is.
var ErrBusy = errors.New("session busy")

func (e *BusyError) Is(target error) bool { return target == ErrBusy }

func (s Store) lockPath(id string) string { return filepath.Join(s.Dir, "locks", id+".lock") }

// Lock takes the session's writer lock without waiting: one process at a
// time reads a session's journal to go on with it and writes it. A lock
// another process holds is a *BusyError. Release it when the session is
// closed; a process that dies releases it too.
func (s Store) Lock(id string) (*filelock.Lock, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	l, err := filelock.Acquire(s.lockPath(id))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, &BusyError{ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return l, nil
}

// Prune deletes every session whose last activity is before cutoff: its
// journal, index entry, key and lock file. A session a process holds is
// left (and named in skipped). It returns the sessions it deleted.
func (s Store) Prune(cutoff time.Time) (deleted []Meta, skipped []string, err error) {
	all, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	for _, m := range all {
		if !m.Updated.Before(cutoff) {
			continue
		}
		ok, err := s.pruneOne(m)
		if err != nil {
			return deleted, skipped, err
		}
		if ok {
			deleted = append(deleted, m)
		} else {
			skipped = append(skipped, m.ID)
		}
	}
	return deleted, skipped, nil
}

// pruneOne deletes m unless a process holds it (false).
func (s Store) pruneOne(m Meta) (bool, error) {
	lock, err := s.Lock(m.ID)
	if errors.Is(err, ErrBusy) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lock.Release()
	if trace.CheckUnlocked(m.Trace) != nil {
		return false, nil
	}
	if full, err := s.Get(m.ID); err == nil {
		m = full // the entry's key and trace, as Put wrote them
	}
	return true, s.remove(m)
}
