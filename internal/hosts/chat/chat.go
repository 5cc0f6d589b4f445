// Package chat is host.chat.*: durable multi-turn conversations with an
// agent, kept beside their session in the sessions directory
// (<sessions dir>/<session>.chats/<chat id>.json). A chat belongs to the
// session that made it: a new session starts with none, a resumed one
// finds its own. A chat's turns go through host.agent.converse, the host's
// agent call path, so a recording keeps them as agent calls and a replay
// answers them from the cassette while the chat handlers run and rebuild
// the transcript. host.agent.converse itself becomes chat-aware: with
// with.chat_id it answers in that chat.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Namespace is the handlers' prefix.
const Namespace = "host.chat."

// Converse is the agent verb a chat's turns are answered by.
const Converse = host.AgentNamespace + "converse"

// Purpose marks the agent calls kitsoki makes for a chat (trace's
// agent.call.start purpose).
const Purpose = "chat"

var ops = []string{"resolve", "create", "list", "transcript", "fork", "archive", "rename", "suggest_title", "resolve_ref", "drive"}

// Config is what the handlers need of the run.
type Config struct {
	// Dir is the sessions directory; "" keeps no chats (every call fails
	// saying so).
	Dir    string
	Clock  clock.Clock
	Logger *slog.Logger
}

// Handler is host.chat.* for one run.
type Handler struct {
	cfg      Config
	h        *host.Host
	converse host.Handler // the host's own host.agent.converse
	stores   stores
	locks    sync.Map // chat key → chan struct{} (a one-slot lock)
}

// Register installs host.chat.<op> for every op and makes
// host.agent.converse chat-aware. Call it after host.New.
func Register(h *host.Host, cfg Config) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hd := &Handler{cfg: cfg, h: h, stores: stores{root: cfg.Dir}}
	hd.converse, _ = h.Handler(Converse)
	for _, op := range ops {
		h.Register(Namespace+op, &opHandler{hd: hd, op: op})
	}
	if hd.converse != nil {
		h.Register(Converse, converseHandler{hd: hd})
	}
	return hd
}

// opHandler is one host.chat.<op>. Its effects (the transcript) are the
// run's own state, so a recording leaves it out and a replay runs it: its
// agent calls are what is recorded and replayed.
type opHandler struct {
	hd *Handler
	op string
}

// LiveOnReplay says every call runs on a replay (host.LiveOnReplay).
func (*opHandler) LiveOnReplay(*host.Call) bool { return true }

func fail(name string, err error, data map[string]any) *host.Result {
	d := map[string]any{}
	maps.Copy(d, data)
	d["ok"] = false
	return &host.Result{Data: d, Err: fmt.Errorf("%s: %w", name, err)}
}

func (o *opHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	name := Namespace + o.op
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err, nil), nil
	}
	st, err := o.hd.stores.open(call.SessionID)
	if err != nil {
		return fail(name, err, nil), nil
	}
	a := args(call.Args)
	var data map[string]any
	if o.op == "drive" || o.op == "suggest_title" {
		data, err = o.agentOp(ctx, call, st, a)
	} else {
		o.hd.stores.mu.Lock()
		data, err = o.local(st, a)
		o.hd.stores.mu.Unlock()
	}
	if err != nil {
		return fail(name, err, data), nil
	}
	data["ok"] = true
	return &host.Result{Data: data}, nil
}

// local runs the ops that only read or write the store.
func (o *opHandler) local(st *store, a args) (map[string]any, error) {
	now := o.hd.now()
	switch o.op {
	case "resolve", "create":
		app, room, key, err := a.scope()
		if err != nil {
			return nil, err
		}
		if o.op == "resolve" {
			cs, err := st.all()
			if err != nil {
				return nil, err
			}
			for _, c := range slices.Backward(cs) {
				if c.Status == StatusActive && c.App == app && c.Room == room && c.ScopeKey == key {
					return withNew(c, false), nil
				}
			}
		}
		title := a.str("title")
		if title == "" {
			title = "Chat in " + room
		}
		c := &Chat{App: app, Room: room, ScopeKey: key, Title: title, Status: StatusActive, Created: now, Updated: now, Messages: []Message{}}
		if err := st.create(c); err != nil {
			return nil, err
		}
		return withNew(c, true), nil
	case "list":
		return o.list(st, a)
	case "transcript":
		return o.transcript(st, a)
	case "fork", "archive", "rename":
		return o.change(st, a, now)
	case "resolve_ref":
		c, err := o.ref(st, a, a.str("ref"))
		if err != nil {
			return nil, err
		}
		return briefOf(c), nil
	}
	return nil, fmt.Errorf("unknown op %q", o.op)
}

func briefOf(c *Chat) map[string]any {
	return map[string]any{"chat_id": c.ID, "title": c.Title, "status": c.Status}
}

func withNew(c *Chat, isNew bool) map[string]any {
	d := briefOf(c)
	d["is_new"] = isNew
	return d
}

func (o *opHandler) list(st *store, a args) (map[string]any, error) {
	app, room, key, err := a.scope()
	if err != nil {
		return nil, err
	}
	all, err := a.flag("all_status")
	if err != nil {
		return nil, err
	}
	cs, err := inScope(st, app, room, key, all)
	if err != nil {
		return nil, err
	}
	list, lines := []any{}, []string{}
	for i, c := range cs {
		list = append(list, c.summary())
		lines = append(lines, fmt.Sprintf("%d. **%s** (%s, %d messages, %s)", i+1, c.Title, c.ID, len(c.Messages), c.Status))
	}
	rendered := "No chats yet."
	if len(lines) > 0 {
		rendered = strings.Join(lines, "\n")
	}
	return map[string]any{"chats": list, "count": int64(len(list)), "rendered": rendered}, nil
}

// inScope lists a scope's chats, the most recently active first (archived
// ones only with all).
func inScope(st *store, app, room, key string, all bool) ([]*Chat, error) {
	cs, err := st.all()
	if err != nil {
		return nil, err
	}
	var out []*Chat
	for _, c := range cs {
		if c.inScope(app, room, key) && (all || c.Status == StatusActive) {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *Chat) int {
		if c := strings.Compare(b.Updated, a.Updated); c != 0 {
			return c
		}
		return seqOf(b.ID) - seqOf(a.ID)
	})
	return out, nil
}

func (o *opHandler) transcript(st *store, a args) (map[string]any, error) {
	c, err := a.chat(st)
	if err != nil {
		return nil, err
	}
	since, err := a.int("since_seq", 0)
	if err != nil {
		return nil, err
	}
	max, err := a.int("max_turns", 20)
	if err != nil {
		return nil, err
	}
	var msgs []Message
	for _, m := range c.Messages {
		if m.Seq > since {
			msgs = append(msgs, m)
		}
	}
	if max > 0 && len(msgs) > max {
		msgs = msgs[len(msgs)-max:]
	}
	list := []any{}
	for _, m := range msgs {
		list = append(list, map[string]any{"seq": int64(m.Seq), "role": m.Role, "text": m.Text, "at": m.At})
	}
	return map[string]any{"messages": list, "latest_seq": int64(c.latest()), "title": c.Title, "rendered": render(msgs)}, nil
}

// render writes messages as Markdown: one "**role:** text" paragraph each.
func render(msgs []Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "**%s:** %s", m.Role, m.Text)
	}
	return b.String()
}

// change forks, archives or renames a chat.
func (o *opHandler) change(st *store, a args, now string) (map[string]any, error) {
	c, err := a.chat(st)
	if err != nil {
		return nil, err
	}
	switch o.op {
	case "fork":
		title := a.str("title")
		if title == "" {
			title = c.Title + " (fork)"
		}
		f := &Chat{App: c.App, Room: c.Room, ScopeKey: c.ScopeKey, Title: title, Status: StatusActive, Parent: c.ID,
			Created: now, Updated: now, Messages: slices.Clone(c.Messages)}
		if err := st.create(f); err != nil {
			return nil, err
		}
		d := briefOf(f)
		d["parent_chat_id"] = c.ID
		return d, nil
	case "archive":
		c.Status = StatusArchived
	case "rename":
		title := a.str("title")
		if title == "" {
			return nil, errors.New("with.title is required: the chat's new title")
		}
		c.Title = title
	}
	c.Updated = now
	if err := st.put(c); err != nil {
		return nil, err
	}
	return briefOf(c), nil
}

// ref resolves a reference: "current" (the most recently active chat of
// the scope), a chat id, an id's number, a position in list (1 = the most
// recent), a unique id prefix, or words every one of which the title
// holds.
func (o *opHandler) ref(st *store, a args, ref string) (*Chat, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, errors.New("with.ref is required: a chat id, a position in host.chat.list, \"current\", or words of a title")
	}
	if validID(ref) {
		return st.get(ref)
	}
	app, room, key, err := a.scope()
	if err != nil {
		return nil, err
	}
	cs, err := inScope(st, app, room, key, false)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("chat_not_found: the scope %s/%s has no chat for %q: create one with host.chat.resolve", app, room, ref)
	}
	if strings.EqualFold(ref, "current") {
		return cs[0], nil
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(ref, "#")); err == nil && n >= 1 && n <= len(cs) {
		return cs[n-1], nil
	}
	var hits []*Chat
	words := strings.Fields(strings.ToLower(ref))
	for _, c := range cs {
		title := strings.ToLower(c.Title)
		if strings.HasPrefix(c.ID, ref) || allIn(words, title) {
			hits = append(hits, c)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return nil, fmt.Errorf("chat_not_found: no chat of %s/%s matches %q: name it by id, position (1 is the most recent), \"current\" or words of its title", app, room, ref)
	}
	var ids []string
	for _, c := range hits {
		ids = append(ids, c.ID+" ("+c.Title+")")
	}
	return nil, fmt.Errorf("%q matches %d chats (%s): name one by id", ref, len(hits), strings.Join(ids, ", "))
}

func allIn(words []string, s string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return len(words) > 0
}

func (hd *Handler) now() string { return hd.cfg.Clock.Now().UTC().Format(time.RFC3339) }

// args reads a call's with: map.
type args map[string]any

func (a args) str(key string) string {
	s, _ := a[key].(string)
	return strings.TrimSpace(s)
}

func (a args) scope() (app, room, key string, err error) {
	app, room, key = a.str("app"), a.str("room"), a.str("scope_key")
	if app == "" || room == "" {
		return "", "", "", errors.New("with.app and with.room are required: the story and the room the chat belongs to (e.g. app: prd, room: idle)")
	}
	return app, room, key, nil
}

func (a args) flag(key string) (bool, error) {
	switch v := a[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		return strconv.ParseBool(strings.TrimSpace(v))
	}
	return false, fmt.Errorf("with.%s must be true or false, got %v", key, a[key])
}

func (a args) int(key string, def int) (int, error) {
	v, ok := a[key]
	if !ok || v == nil || v == "" {
		return def, nil
	}
	if s, ok := v.(string); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("with.%s must be a whole number, got %q", key, s)
		}
		return n, nil
	}
	n, ok := number.Int(v)
	if !ok {
		return 0, fmt.Errorf("with.%s must be a whole number, got %v", key, v)
	}
	return int(n), nil
}

func (a args) chat(st *store) (*Chat, error) {
	id := a.str("chat_id")
	if id == "" {
		return nil, errors.New("with.chat_id is required: the chat (bind chat_id from host.chat.resolve)")
	}
	return st.get(id)
}

// answerOf is the reply text of a host.agent.converse result: stdout (the
// built-in path), else the submission (a string, or its answer, text,
// reply or message key), else the submission as JSON.
func answerOf(data map[string]any) string {
	if s, _ := data["stdout"].(string); strings.TrimSpace(s) != "" {
		return s
	}
	switch v := data["submitted"].(type) {
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"answer", "text", "reply", "message"} {
			if s, ok := v[k].(string); ok {
				return s
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
