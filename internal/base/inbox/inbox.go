// Package inbox is a session's notification list: what background jobs
// post when they start, ask a question and end, and what a story posts
// with host.inbox.add. Each notification has a severity and may name the
// state (and job) it is about, so a front end can take the user there.
package inbox

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The severities, mildest first.
const (
	Info           = "info"
	Success        = "success"
	Warn           = "warn"
	Error          = "error"
	ActionRequired = "action_required"
)

// Severities lists the valid severities.
var Severities = []string{Info, Success, Warn, Error, ActionRequired}

// Notification is one inbox entry.
type Notification struct {
	ID       string // n-1, n-2, … in posting order
	Severity string
	Kind     string // what it is about: job, checkpoint, incident, … (free text)
	Title    string
	Body     string
	Thread   string
	State    string // the state it points to ("" for none)
	JobID    string // the background job it is about ("" for none)
	Read     bool
}

// Map is the notification as host result data.
func (n Notification) Map() map[string]any {
	m := map[string]any{"id": n.ID, "severity": n.Severity, "title": n.Title, "read": n.Read}
	for k, v := range map[string]string{"kind": n.Kind, "body": n.Body, "thread": n.Thread, "state": n.State, "job_id": n.JobID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Summary counts the unread notifications.
type Summary struct {
	Unread         int
	NeedsAttention int      // unread action_required ones
	Severities     []string // the unread ones' severities, sorted
}

// Inbox holds a session's notifications. It is safe for concurrent use.
type Inbox struct {
	mu    sync.Mutex
	items []Notification
}

// New returns an empty inbox.
func New() *Inbox { return &Inbox{} }

// CheckSeverity returns an error naming the valid severities when sev is
// not one.
func CheckSeverity(sev string) error {
	if slices.Contains(Severities, sev) {
		return nil
	}
	return fmt.Errorf("severity %q is not one of %s", sev, strings.Join(Severities, ", "))
}

// Add posts a notification (severity info when empty) and returns it with
// its id.
func (b *Inbox) Add(n Notification) (Notification, error) {
	if n.Severity == "" {
		n.Severity = Info
	}
	if err := CheckSeverity(n.Severity); err != nil {
		return Notification{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n.ID = fmt.Sprintf("n-%d", len(b.items)+1)
	n.Read = false
	b.items = append(b.items, n)
	return n, nil
}

// List returns the notifications in posting order; unreadOnly leaves the
// read ones out.
func (b *Inbox) List(unreadOnly bool) []Notification {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Notification, 0, len(b.items))
	for _, n := range b.items {
		if !unreadOnly || !n.Read {
			out = append(out, n)
		}
	}
	return out
}

// MarkRead marks a notification read; an unknown id is an error.
func (b *Inbox) MarkRead(id string) (Notification, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.items {
		if b.items[i].ID == id {
			b.items[i].Read = true
			return b.items[i], nil
		}
	}
	if len(b.items) == 0 {
		return Notification{}, fmt.Errorf("no notification %q: the inbox is empty", id)
	}
	return Notification{}, fmt.Errorf("no notification %q (the inbox holds n-1 … n-%d)", id, len(b.items))
}

// Summary counts the unread notifications.
func (b *Inbox) Summary() Summary {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Summary{Severities: []string{}}
	for _, n := range b.items {
		if n.Read {
			continue
		}
		s.Unread++
		if n.Severity == ActionRequired {
			s.NeedsAttention++
		}
		s.Severities = append(s.Severities, n.Severity)
	}
	slices.Sort(s.Severities)
	return s
}
