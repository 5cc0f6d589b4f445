package chat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// defaultLockWait is how long a turn waits for a chat another call is
// driving.
const defaultLockWait = 300 * time.Second

// agentOp runs drive or suggest_title: the ops that ask an agent.
func (o *opHandler) agentOp(ctx context.Context, call *host.Call, st *store, a args) (map[string]any, error) {
	o.hd.stores.mu.Lock()
	var c *Chat
	var err error
	if ref := a.str("chat_ref"); ref != "" && a.str("chat_id") == "" {
		c, err = o.ref(st, a, ref)
	} else {
		c, err = a.chat(st)
	}
	o.hd.stores.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if o.op == "suggest_title" {
		return o.hd.suggest(ctx, call, st, c)
	}
	payload := a.str("payload")
	if payload == "" {
		return nil, errors.New("with.payload is required: the user's message of the turn")
	}
	if err := a.await(); err != nil {
		return nil, err
	}
	wait := defaultLockWait
	if n, err := a.int("timeout_seconds", 0); err != nil {
		return nil, err
	} else if n > 0 {
		wait = time.Duration(n) * time.Second
	}
	enq := o.hd.cfg.Clock.Now().UnixMicro()
	t := turnReq{chatID: c.ID, text: payload, wait: wait, transport: a.str("transport"), thread: a.str("thread"), actor: a.str("actor"),
		correlationID: a.str("correlation_id"), with: map[string]any{"agent": a["agent"], "working_dir": a["working_dir"]}}
	if t.transport == "" {
		t.transport = "state_machine"
	}
	res, seq, err := o.hd.turn(ctx, call, st, t)
	data := map[string]any{"chat_id": c.ID, "drive_id": fmt.Sprintf("%s#%d", c.ID, seq), "enqueued_at": enq, "status": "done", "correlation_id": t.correlationID}
	if err != nil {
		data["status"], data["error"] = "failed", err.Error()
		return data, err
	}
	data["result_seq"], data["result_text"] = int64(res.seq), res.text
	return data, nil
}

// await checks with.await: a turn always runs in the call, so true (or
// leaving it out) is what kitsoki does and false, a turn queued to answer
// later, is refused with the way to get it.
func (a args) await() error {
	if v, ok := a["await"]; !ok || v == nil || v == "" {
		return nil
	}
	wait, err := a.flag("await")
	if err != nil {
		return fmt.Errorf("with.await must be true or false, got %v", a["await"])
	}
	if !wait {
		return errors.New("with.await false is not supported: kitsoki runs a chat's turn in the call; put background: true on the invoke to go on without waiting for it")
	}
	return nil
}

// turnReq is one user message to answer in a chat.
type turnReq struct {
	chatID, text             string
	wait                     time.Duration
	transport, thread, actor string
	correlationID            string
	with                     map[string]any // what the agent call is given besides the conversation
}

type reply struct {
	seq  int
	text string
	data map[string]any // the converse call's result
}

// turn adds the user's message to the chat, asks host.agent.converse with
// the conversation, and adds the answer: holding the chat's lock, so two
// calls never interleave their turns. seq is the user message's.
func (hd *Handler) turn(ctx context.Context, call *host.Call, st *store, t turnReq) (*reply, int, error) {
	unlock, err := hd.lock(ctx, call.SessionID+"/"+t.chatID, t.wait)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	hd.stores.mu.Lock()
	c, err := st.get(t.chatID)
	if err == nil {
		seq := c.latest() + 1
		c.Messages = append(c.Messages, Message{Seq: seq, Role: "user", Text: t.text, At: hd.now(), Transport: t.transport, Thread: t.thread, Actor: t.actor, CorrelationID: t.correlationID})
		c.Updated = hd.now()
		err = st.put(c)
	}
	hd.stores.mu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	userSeq := c.latest()
	args := map[string]any{}
	for k, v := range t.with {
		if v != nil && v != "" {
			args[k] = v
		}
	}
	args["question"], args["chat_id"] = t.text, c.ID
	args["prompt"] = conversation(c.Messages)
	args["transcript"] = messageList(c.Messages[:len(c.Messages)-1])
	sub := *call
	sub.Namespace, sub.Args, sub.Purpose, sub.Schema = Converse, args, Purpose, nil
	res, err := hd.h.Dispatch(ctx, &sub)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return nil, userSeq, fmt.Errorf("drive_failed: the agent's turn in %s failed: %w", c.ID, err)
	}
	text := answerOf(res.Data)
	hd.stores.mu.Lock()
	defer hd.stores.mu.Unlock()
	if c, err = st.get(t.chatID); err != nil {
		return nil, userSeq, err
	}
	seq := c.latest() + 1
	c.Messages = append(c.Messages, Message{Seq: seq, Role: "assistant", Text: text, At: hd.now()})
	c.Updated = hd.now()
	if err := st.put(c); err != nil {
		return nil, userSeq, err
	}
	return &reply{seq: seq, text: text, data: res.Data}, userSeq, nil
}

// conversation is the prompt of a chat's turn: the messages so far, the
// last one the question to answer.
func conversation(msgs []Message) string {
	var b strings.Builder
	if len(msgs) > 1 {
		b.WriteString("The conversation so far:\n\n")
		b.WriteString(render(msgs[:len(msgs)-1]))
		b.WriteString("\n\nAnswer the user's next message.\n\n")
	}
	fmt.Fprintf(&b, "**user:** %s", msgs[len(msgs)-1].Text)
	return b.String()
}

func messageList(msgs []Message) []any {
	out := []any{}
	for _, m := range msgs {
		out = append(out, map[string]any{"seq": int64(m.Seq), "role": m.Role, "text": m.Text})
	}
	return out
}

// lock takes a chat's one-slot lock, waiting at most wait (on the run's
// clock) for the call holding it.
func (hd *Handler) lock(ctx context.Context, key string, wait time.Duration) (func(), error) {
	v, _ := hd.locks.LoadOrStore(key, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	default:
	}
	wctx, cancel := clock.WithTimeout(ctx, hd.cfg.Clock, wait)
	defer cancel()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-wctx.Done():
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("chat_busy: another call has been driving %s for %s (with.timeout_seconds): try again when its turn has ended", strings.SplitN(key, "/", 2)[1], wait)
	}
}

// titleSchema is what a title suggestion is.
var titleSchema = []byte(`{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":1,"maxLength":80}},"additionalProperties":true}`)

// suggest asks an agent (host.agent.decide, with the chat's transcript)
// for a 4-8 word title. The chat is not renamed.
func (hd *Handler) suggest(ctx context.Context, call *host.Call, st *store, c *Chat) (map[string]any, error) {
	if len(c.Messages) == 0 {
		return nil, fmt.Errorf("%s has no messages yet to title: drive a turn first", c.ID)
	}
	sch, err := schema.CompileDocument("chat-title.json", titleSchema)
	if err != nil {
		return nil, err
	}
	a := map[string]any{"prompt": "Propose a title of 4 to 8 words for this conversation. Submit it as title.\n\n" + render(c.Messages), "chat_id": c.ID}
	if p, ok := call.Args["agent"]; ok && p != nil && p != "" {
		a["agent"] = p
	}
	sub := *call
	sub.Namespace, sub.Args, sub.Purpose, sub.Schema = host.AgentNamespace+"decide", a, Purpose, sch
	res, err := hd.h.Dispatch(ctx, &sub)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return nil, fmt.Errorf("the title agent failed: %w", err)
	}
	sm, _ := res.Data["submitted"].(map[string]any)
	title, _ := sm["title"].(string)
	if strings.TrimSpace(title) == "" {
		return nil, errors.New("the title agent submitted no title")
	}
	return map[string]any{"chat_id": c.ID, "title": strings.TrimSpace(title)}, nil
}

// converseHandler is host.agent.converse made chat-aware: with.chat_id
// names a chat of the session, and the call is that chat's next turn (the
// question and the answer join its transcript); without it, the call is
// the host's own converse. Either way the result has answer.
type converseHandler struct{ hd *Handler }

// LiveOnReplay: a turn of a chat runs on a replay (its inner converse call
// is the one recorded); other converse calls are recorded as they are.
func (c converseHandler) LiveOnReplay(call *host.Call) bool {
	id, _ := call.Args["chat_id"].(string)
	return call.Purpose != Purpose && strings.TrimSpace(id) != ""
}

func (c converseHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	id, _ := call.Args["chat_id"].(string)
	if call.Purpose == Purpose || strings.TrimSpace(id) == "" {
		res, err := c.hd.converse.Invoke(ctx, call)
		if err == nil && res != nil && res.Err == nil {
			res = withAnswer(res)
		}
		return res, err
	}
	st, err := c.hd.stores.open(call.SessionID)
	if err != nil {
		return fail(Converse, err, nil), nil
	}
	q, _ := call.Args["question"].(string)
	if strings.TrimSpace(q) == "" {
		q, _ = call.Args["prompt"].(string)
	}
	if strings.TrimSpace(q) == "" {
		return fail(Converse, errors.New("with.question is required: the user's message of this turn of the chat"), nil), nil
	}
	with := map[string]any{}
	for k, v := range call.Args {
		if k != "question" && k != "prompt" && k != "chat_id" {
			with[k] = v
		}
	}
	r, _, err := c.hd.turn(ctx, call, st, turnReq{chatID: strings.TrimSpace(id), text: q, wait: defaultLockWait, transport: "state_machine", with: with})
	if err != nil {
		return fail(Converse, err, nil), nil
	}
	data := maps.Clone(r.data)
	data["answer"], data["chat_id"], data["transcript_seq"] = r.text, strings.TrimSpace(id), int64(r.seq)
	data["claude_session_id"] = sessionOf(r.data)
	return &host.Result{Data: data}, nil
}

// withAnswer adds answer (and claude_session_id) to a converse result.
func withAnswer(res *host.Result) *host.Result {
	data := maps.Clone(res.Data)
	if data == nil {
		data = map[string]any{}
	}
	data["answer"] = answerOf(data)
	if _, ok := data["claude_session_id"]; !ok {
		data["claude_session_id"] = sessionOf(data)
	}
	return &host.Result{Data: data, CallID: res.CallID}
}

// sessionOf is the agent's own session id of a converse answer (the
// claude CLI reports it in meta), "" when it gave none.
func sessionOf(data map[string]any) string {
	if s, _ := data["claude_session_id"].(string); s != "" {
		return s
	}
	if m, ok := data["meta"].(map[string]any); ok {
		s, _ := m["session_id"].(string)
		return s
	}
	return ""
}
