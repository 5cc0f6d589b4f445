// Package filelock takes exclusive advisory locks on files (flock(2)):
// the one lock that keeps a second writer off a trace file or a durable
// session. A lock lives as long as its descriptor: closing the file
// releases it, and so does the kernel when the process dies.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrLocked is TryLock's error when another descriptor holds the lock.
var ErrLocked = errors.New("locked by another process")

// TryLock takes an exclusive lock on f without waiting; ErrLocked says
// another descriptor (in this process or another) holds it.
func TryLock(f *os.File) error { return lock(f, false) }

// Lock is a held lock on a file of its own (a lock file).
type Lock struct{ f *os.File }

// Acquire creates the lock file at path (and its directory) if needed and
// takes its lock without waiting. The error wraps ErrLocked when another
// holder has it.
func Acquire(path string) (*Lock, error) { return acquire(path, false) }

// Wait is Acquire that waits for the holder to release the lock. It is for
// locks held for a moment (an index append), never across a turn.
func Wait(path string) (*Lock, error) { return acquire(path, true) }

func acquire(path string, wait bool) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := lock(f, wait); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up; the lock file stays. A nil Lock, or one
// released already, does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
