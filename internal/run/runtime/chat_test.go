package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/plugin"
)

// chatAgent answers a chat's turns by echoing the question and how much
// history the call carried, and titles a chat.
var chatAgent = agent.AgentFunc(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	w := c.Request.With
	if c.Request.Verb == "decide" {
		return plugin.Submit(map[string]any{"title": "Discussing the tour idea"})
	}
	hist, _ := w["transcript"].([]any)
	return plugin.Submit(fmt.Sprintf("you said %q after %d messages", w["question"], len(hist)))
})

// chatRun opens a session of testdata/chat in dir with agent (nil: the
// cassette's) and a recorder or a cassette.
func chatRun(t *testing.T, dir string, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	return chatRunAs(t, dir, "chat-run", cfg)
}

// chatRunAs is chatRun under session id.
func chatRunAs(t *testing.T, dir, id string, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Session = &runtime.Session{ID: id}
	cfg.Clock = clock.NewFake(time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC))
	cfg.SessionsDir = filepath.Join(dir, "sessions")
	rt, err := runtime.Open(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if _, err := rt.Session().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt
}

func chatDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/chat/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{".kitsoki-root": "", "app.yaml": string(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type chatTranscript struct {
	Title    string
	Messages []struct {
		Seq        int
		Role, Text string
	}
}

func readChat(t *testing.T, dir, id string) chatTranscript {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sessions", "chat-run.chats", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c chatTranscript
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// A chat kept beside its session: resolve is idempotent, converse with
// chat_id and drive are turns whose question and answer join the
// transcript, and fork, rename, archive, list, resolve_ref and
// suggest_title act on it. The same run recorded and then replayed from
// the cassette (no agent) rebuilds the same transcript.
func TestChatsLiveAndReplayed(t *testing.T) {
	dir := chatDir(t)
	rec := replay.NewRecorder("chatty", "")
	rt := chatRun(t, dir, runtime.Config{Agents: runtime.Agents{Builtin: chatAgent}, Recorder: rec})
	sess := rt.Session()
	ctx := context.Background()
	do := func(intent string, slots map[string]any) map[string]any {
		t.Helper()
		if _, err := sess.Turn(ctx, intent, slots, ""); err != nil {
			t.Fatalf("%s: %v", intent, err)
		}
		if sess.State() != "idle" {
			t.Fatalf("%s: state %s, error %v", intent, sess.State(), sess.World()["error"])
		}
		return sess.World()
	}
	w := sess.World()
	if w["chat_id"] != "chat-1" || w["is_new"] != true || w["title"] != "Idea discovery" {
		t.Fatalf("resolve: %v %v %v", w["chat_id"], w["is_new"], w["title"])
	}
	w = do("ask", map[string]any{"q": "a tour command?"})
	if w["answer"] != `you said "a tour command?" after 0 messages` || w["seq"] != int64(2) || w["is_new"] != false {
		t.Errorf("converse turn: %v seq %v (resolve again: is_new %v)", w["answer"], w["seq"], w["is_new"])
	}
	w = do("drive", map[string]any{"q": "for demo videos"})
	if w["drive_text"] != `you said "for demo videos" after 2 messages` || w["drive_id"] != "chat-1#3" {
		t.Errorf("drive: %v %v", w["drive_text"], w["drive_id"])
	}
	// drive's transport, thread, actor and correlation_id are kept on the
	// turn's user message; correlation_id is returned too.
	if w["drive_corr"] != "c-7" {
		t.Errorf("drive's correlation_id = %v, want c-7", w["drive_corr"])
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "sessions", "chat-run.chats", "chat-1.json")); err != nil ||
		!strings.Contains(string(raw), `"transport": "slack"`) || !strings.Contains(string(raw), `"thread": "T1"`) ||
		!strings.Contains(string(raw), `"actor": "ana"`) || !strings.Contains(string(raw), `"correlation_id": "c-7"`) {
		t.Errorf("the driven message does not keep transport, thread, actor and correlation_id: %s %v", raw, err)
	}
	w = do("read", nil)
	wantRendered := "**assistant:** you said \"a tour command?\" after 0 messages\n\n**user:** for demo videos\n\n**assistant:** you said \"for demo videos\" after 2 messages"
	if w["rendered"] != wantRendered || w["latest"] != int64(4) {
		t.Errorf("transcript since 1:\n%v\nlatest %v", w["rendered"], w["latest"])
	}
	w = do("fork", nil)
	if w["forked"] != "chat-2" || w["count"] != int64(2) || !strings.Contains(w["rendered"].(string), "Tour idea, second take") {
		t.Errorf("fork: %v, list %v %v", w["forked"], w["count"], w["rendered"])
	}
	if c := readChat(t, dir, "chat-2"); len(c.Messages) != 4 || c.Title != "Tour idea, second take" {
		t.Errorf("the fork: %+v", c)
	}
	w = do("find", map[string]any{"ref": "second take"})
	if w["found"] != "chat-2" {
		t.Errorf("resolve_ref by title: %v", w["found"])
	}
	w = do("tidy", nil)
	if w["count"] != int64(1) {
		t.Errorf("list after archive: %v", w["count"])
	}
	w = do("find", map[string]any{"ref": "current"})
	if w["found"] != "chat-1" {
		t.Errorf("resolve_ref current: %v", w["found"])
	}
	w = do("suggest", nil)
	if w["suggested"] != "Discussing the tour idea" {
		t.Errorf("suggest_title: %v", w["suggested"])
	}
	if _, err := sess.Turn(ctx, "find", map[string]any{"ref": "nothing like it"}, ""); err != nil || !strings.Contains(fmt.Sprint(sess.World()["error"]), `chat_not_found: no chat of chatty/idle matches "nothing like it"`) {
		t.Errorf("an unknown ref: %v %v", err, sess.World()["error"])
	}
	// await: false (a turn queued for later) is refused, naming the way.
	before := len(readChat(t, dir, "chat-1").Messages)
	do("reenter", nil) // out of failed, where the unknown ref left the session
	if _, err := sess.Turn(ctx, "nowait", nil, ""); err != nil || sess.State() != "failed" ||
		!strings.Contains(fmt.Sprint(sess.World()["error"]), "with.await false is not supported: kitsoki runs a chat's turn in the call; put background: true on the invoke") {
		t.Errorf("await false: %v state %s error %v", err, sess.State(), sess.World()["error"])
	}
	if after := len(readChat(t, dir, "chat-1").Messages); after != before {
		t.Errorf("a refused drive changed the transcript: %d messages, had %d", after, before)
	}
	live := readChat(t, dir, "chat-1")
	rt.Close()

	cassette := filepath.Join(t.TempDir(), "chat.cassette.yaml")
	if err := rec.WriteFile(cassette); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(cassette)
	if strings.Contains(string(raw), "host.chat.") {
		t.Errorf("the recording kept host.chat.* calls (their agent calls are what it records):\n%s", raw)
	}
	// Replay the same inputs with no agent: the cassette answers the agent
	// calls and the chat handlers rebuild the transcript.
	dir2 := chatDir(t)
	c, err := replay.Load(cassette)
	if err != nil {
		t.Fatal(err)
	}
	rt2 := chatRun(t, dir2, runtime.Config{Cassette: c})
	sess = rt2.Session()
	do("ask", map[string]any{"q": "a tour command?"})
	w = do("drive", map[string]any{"q": "for demo videos"})
	if w["drive_text"] != `you said "for demo videos" after 2 messages` {
		t.Errorf("replayed drive: %v", w["drive_text"])
	}
	replayed := readChat(t, dir2, "chat-1")
	if d := cmp.Diff(live.Messages, replayed.Messages); d != "" {
		t.Errorf("the replayed transcript differs (-live +replayed):\n%s", d)
	}
}

// A chat is kept beside its session: a later run under the same session id
// (what a resume is) finds it with its transcript and goes on with it; a run of
// another session in the same sessions directory starts with none.
func TestChatsOutliveTheRunWithinTheirSession(t *testing.T) {
	dir := chatDir(t)
	ctx := context.Background()
	ask := func(rt *runtime.Runtime, q string) map[string]any {
		t.Helper()
		if _, err := rt.Session().Turn(ctx, "ask", map[string]any{"q": q}, ""); err != nil {
			t.Fatal(err)
		}
		return rt.Session().World()
	}
	first := chatRun(t, dir, runtime.Config{Agents: runtime.Agents{Builtin: chatAgent}})
	ask(first, "a tour command?")
	first.Close()

	again := chatRun(t, dir, runtime.Config{Agents: runtime.Agents{Builtin: chatAgent}})
	w := again.Session().World()
	if w["chat_id"] != "chat-1" || w["is_new"] != false {
		t.Fatalf("the session's next run resolved %v (is_new %v), want its chat-1", w["chat_id"], w["is_new"])
	}
	w = ask(again, "for demo videos?")
	if w["answer"] != `you said "for demo videos?" after 2 messages` || w["seq"] != int64(4) {
		t.Errorf("the next run's turn: %v seq %v, want the two earlier messages carried", w["answer"], w["seq"])
	}
	again.Close()
	if c := readChat(t, dir, "chat-1"); len(c.Messages) != 4 {
		t.Errorf("chat-1 has %d messages, want 4", len(c.Messages))
	}

	other := chatRunAs(t, dir, "another-run", runtime.Config{Agents: runtime.Agents{Builtin: chatAgent}})
	if w := other.Session().World(); w["chat_id"] != "chat-1" || w["is_new"] != true {
		t.Errorf("another session resolved %v (is_new %v), want a new chat of its own", w["chat_id"], w["is_new"])
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions", "another-run.chats", "chat-1.json")); err != nil {
		t.Errorf("the other session's chat is not beside it: %v", err)
	}
}
