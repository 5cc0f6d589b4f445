package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
)

// Chat is one conversation, kept as <sessions dir>/<session>.chats/<id>.json.
type Chat struct {
	ID       string    `json:"id"`
	App      string    `json:"app"`
	Room     string    `json:"room"`
	ScopeKey string    `json:"scope_key,omitempty"`
	Title    string    `json:"title"`
	Status   string    `json:"status"` // active or archived
	Parent   string    `json:"parent_chat_id,omitempty"`
	Created  string    `json:"created_at"`
	Updated  string    `json:"last_active_at"`
	Messages []Message `json:"messages"`
}

// Message is one turn of a chat.
type Message struct {
	Seq       int    `json:"seq"`
	Role      string `json:"role"` // user or assistant
	Text      string `json:"text"`
	At        string `json:"at"`
	Transport string `json:"transport,omitempty"`
	Thread    string `json:"thread,omitempty"`
	Actor     string `json:"actor,omitempty"`
	// CorrelationID is the caller's id of a driven turn (host.chat.drive's
	// with.correlation_id), kept on its user message.
	CorrelationID string `json:"correlation_id,omitempty"`
}

// Chat statuses.
const (
	StatusActive   = "active"
	StatusArchived = "archived"
)

// store is the chats of one session.
type store struct {
	fs  hostfs.FS
	dir string // <sessions dir>/<session>.chats
}

// stores opens the chats of the sessions of a run; mu serialises their
// reads and writes.
type stores struct {
	root string // the sessions directory
	mu   sync.Mutex
}

// open returns the session's chats. The sessions directory is made when
// missing; every file stays inside it.
func (s *stores) open(session string) (*store, error) {
	if s.root == "" {
		return nil, errors.New("this run keeps no sessions directory, so it has no chats")
	}
	if err := checkSession(session); err != nil {
		return nil, err
	}
	fsys, err := hostfs.Dir(s.root)
	if err != nil {
		return nil, fmt.Errorf("sessions directory %s: %w", s.root, err)
	}
	return &store{fs: fsys, dir: filepath.Join(fsys.Workspace().Dir(), session+".chats")}, nil
}

// checkSession refuses a session id that is not a file name.
func checkSession(id string) error {
	if id == "" {
		return errors.New("the call has no session, so there is no chat to keep: chats belong to a session")
	}
	if strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") {
		return fmt.Errorf("session id %q cannot name a directory", id)
	}
	return nil
}

func (st *store) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("with.chat_id %q is not a chat id of this session (ids look like chat-1; list them with host.chat.list)", id)
	}
	return filepath.Join(st.dir, id+".json"), nil
}

func validID(id string) bool {
	n, ok := strings.CutPrefix(id, "chat-")
	_, err := strconv.Atoi(n)
	return ok && err == nil
}

// get reads a chat; a missing one is an error naming the fix.
func (st *store) get(id string) (*Chat, error) {
	p, err := st.path(id)
	if err != nil {
		return nil, err
	}
	b, err := st.fs.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chat_not_found: no chat %q in this session: create it with host.chat.resolve or host.chat.create (chats never outlive their session)", id)
	}
	if err != nil {
		return nil, err
	}
	var c Chat
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w: fix or remove the file", p, err)
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	return &c, nil
}

func (st *store) put(c *Chat) error {
	p, err := st.path(c.ID)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return st.fs.WriteFile(p, append(b, '\n'))
}

// all reads every chat of the session, oldest first.
func (st *store) all() ([]*Chat, error) {
	es, err := st.fs.ReadDir(st.dir)
	if err != nil {
		return nil, err
	}
	var cs []*Chat
	for _, e := range es {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validID(id) {
			continue
		}
		c, err := st.get(id)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *Chat) int { return seqOf(a.ID) - seqOf(b.ID) })
	return cs, nil
}

func seqOf(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "chat-"))
	return n
}

// create makes a new chat with the next id.
func (st *store) create(c *Chat) error {
	cs, err := st.all()
	if err != nil {
		return err
	}
	next := 1
	for _, o := range cs {
		if n := seqOf(o.ID); n >= next {
			next = n + 1
		}
	}
	for ; ; next++ {
		c.ID = "chat-" + strconv.Itoa(next)
		p, _ := st.path(c.ID)
		b, _ := json.MarshalIndent(c, "", "  ")
		err := st.fs.CreateExclusive(p, append(b, '\n'))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return err
	}
}

// inScope reports whether c belongs to (app, room[, scopeKey]).
func (c *Chat) inScope(app, room, scopeKey string) bool {
	return c.App == app && c.Room == room && (scopeKey == "" || c.ScopeKey == scopeKey)
}

// summary is a chat as list returns it.
func (c *Chat) summary() map[string]any {
	return map[string]any{"id": c.ID, "title": c.Title, "message_count": int64(len(c.Messages)), "last_active_at": c.Updated, "status": c.Status}
}

func (c *Chat) latest() int {
	if n := len(c.Messages); n > 0 {
		return c.Messages[n-1].Seq
	}
	return 0
}
