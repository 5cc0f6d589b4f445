package mcpguard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// DefaultMaxSessions is how many live MCP sessions an endpoint keeps when
// none is configured.
const DefaultMaxSessions = 100

// DefaultIdleTimeout is how long a session may go without a request
// before it expires, when none is configured.
const DefaultIdleTimeout = 30 * time.Minute

// Sessions is a stateful mcp-go SessionIdManager: it mints random ids and
// knows them until the client deletes them or they idle out. mcp-go's
// default manager accepts any well-formed id, so a made-up one would be
// served.
//
// Live sessions are bounded: a session no request has used for the idle
// timeout (measured on the manager's clock) expires, and once the cap is
// reached Guard refuses a request that would start another one (503). A
// session with a request in flight (an open GET stream) does not expire.
type Sessions struct {
	clock   clock.Clock
	idle    time.Duration
	max     int
	mu      sync.Mutex
	live    map[string]*liveSession
	pending int      // admitted requests that may mint an id
	dead    []string // expired ids whose handler state is not yet dropped
	sweepAt time.Time
}

type liveSession struct {
	last time.Time // the end of its latest request
	busy int       // requests in flight
}

var _ server.SessionIdManager = (*Sessions)(nil)

// SessionOption configures a Sessions.
type SessionOption func(*Sessions)

// WithClock measures idle time on c (default: the system clock).
func WithClock(c clock.Clock) SessionOption {
	return func(s *Sessions) {
		if c != nil {
			s.clock = c
		}
	}
}

// WithIdleTimeout expires a session after d without a request; d <= 0
// means DefaultIdleTimeout.
func WithIdleTimeout(d time.Duration) SessionOption {
	return func(s *Sessions) {
		if d > 0 {
			s.idle = d
		}
	}
}

// WithMaxSessions caps the live sessions at n; n <= 0 means
// DefaultMaxSessions.
func WithMaxSessions(n int) SessionOption {
	return func(s *Sessions) {
		if n > 0 {
			s.max = n
		}
	}
}

// NewSessions returns an empty manager.
func NewSessions(opts ...SessionOption) *Sessions {
	s := &Sessions{clock: clock.System{}, idle: DefaultIdleTimeout, max: DefaultMaxSessions, live: map[string]*liveSession{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Generate mints a session id (an initialize request).
func (s *Sessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	id := "mcp-session-" + hex.EncodeToString(b[:])
	s.mu.Lock()
	s.live[id] = &liveSession{last: s.clock.Now()}
	s.mu.Unlock()
	return id
}

// Validate accepts an id this manager minted and nobody deleted.
func (s *Sessions) Validate(id string) (isTerminated bool, err error) {
	if !s.Known(id) {
		return false, fmt.Errorf("unknown session id %q", id)
	}
	return false, nil
}

// Terminate forgets an id (a DELETE).
func (s *Sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	delete(s.live, id)
	s.mu.Unlock()
	return false, nil
}

// Known reports whether id was minted here and neither deleted nor
// expired. An id found expired is forgotten.
func (s *Sessions) Known(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls, ok := s.live[id]
	if ok && s.expiredLocked(ls, s.clock.Now()) {
		s.dropLocked(id)
		return false
	}
	return ok
}

// Len is how many sessions are live (expired ones not yet noticed
// included).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Limits reports the cap and the idle timeout.
func (s *Sessions) Limits() (maxSessions int, idle time.Duration) { return s.max, s.idle }

func (s *Sessions) expiredLocked(ls *liveSession, now time.Time) bool {
	return ls.busy == 0 && now.Sub(ls.last) >= s.idle
}

func (s *Sessions) dropLocked(id string) {
	delete(s.live, id)
	s.dead = append(s.dead, id)
}

// sweepLocked expires the idle sessions, at most every eighth of the idle
// timeout unless forced.
func (s *Sessions) sweepLocked(force bool) {
	now := s.clock.Now()
	if !force && now.Before(s.sweepAt) {
		return
	}
	s.sweepAt = now.Add(s.idle / 8)
	for id, ls := range s.live {
		if s.expiredLocked(ls, now) {
			s.dropLocked(id)
		}
	}
}

// reap expires what is due and returns the ids expired since the last
// call, whose handler state Guard then drops.
func (s *Sessions) reap() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(false)
	dead := s.dead
	s.dead = nil
	return dead
}

// admit lets a request that may mint a session through when the cap
// allows (idle sessions expire first); release undoes it once the
// request is served.
func (s *Sessions) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.live)+s.pending >= s.max {
		s.sweepLocked(true)
	}
	if len(s.live)+s.pending >= s.max {
		return false
	}
	s.pending++
	return true
}

func (s *Sessions) release() {
	s.mu.Lock()
	s.pending--
	s.mu.Unlock()
}

// enter reports whether id is live and, if so, marks a request of it in
// flight, so the session does not expire under it; end marks it done and
// starts its idle time.
func (s *Sessions) enter(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls, ok := s.live[id]
	if !ok {
		return false
	}
	if s.expiredLocked(ls, s.clock.Now()) {
		s.dropLocked(id)
		return false
	}
	ls.busy++
	return true
}

func (s *Sessions) end(id string) {
	s.mu.Lock()
	if ls, ok := s.live[id]; ok {
		ls.busy--
		ls.last = s.clock.Now()
	}
	s.mu.Unlock()
}
